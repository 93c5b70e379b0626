package planner

import (
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// checkInvariants re-derives the safety rules independently of the planner's
// code and fails if a breaks one of them for (d, o).
func checkInvariants(t *testing.T, d Desired, o Observed, a Action) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%v\nviolates: %s\ndesired: %+v\nobserved: %s", a, fmt.Sprintf(format, args...), d, dump(o))
	}
	if b := Plan(d, o); !reflect.DeepEqual(a, b) {
		fail("not deterministic: second call gave %v", b)
	}
	if d.Paused {
		if a.Kind != Wait {
			fail("paused cluster must only wait")
		}
		return
	}
	if DetectFork(o) != nil && a.Kind != Wait {
		fail("acts while the answering members disagree on cluster ID or membership (a fork)")
	}
	checkVersionInvariants(d, o, a, fail)
	dd := d.withDefaults()
	if a.Kind == ForceNewCluster && !d.QuorumLossRecovery {
		fail("force-new-cluster without the opt-in")
	}
	if r := o.Recovery; r != nil {
		// A recorded recovery: only its own steps, with the recorded values, and a pod
		// deleted or the old members' pods removed only on the new pod's marker.
		var newPod *Pod
		for i := range o.Pods {
			if o.Pods[i].Name == r.Member {
				newPod = &o.Pods[i]
			}
		}
		marked := newPod != nil && newPod.RecoveryToken != "" && newPod.RecoveryToken == r.Token
		if (a.Kind == FinishRecovery || a.DeletePod) && !marked {
			fail("acts on a recovery record that its pod does not bear out")
		}
		if a.Kind == ForceNewCluster && newPod != nil {
			fail("starts a recovery whose member's pod exists")
		}
		switch a.Kind {
		case Wait, AbortRecovery:
		case ForceNewCluster:
			if a.From != r.SourceID || len(a.Members) != 1 || a.Members[0].Name != r.Member || a.Revision != r.Revision {
				fail("a recorded recovery is continued with other values than recorded")
			}
		case FinishRecovery:
			if !o.MembersKnown || len(o.Members) != 1 || o.Members[0].Name != r.Member || !o.Members[0].Reachable ||
				o.LeaderID != o.Members[0].ID || o.Members[0].Revision < r.Revision {
				fail("finishes a recovery before the new member alone serves the recorded revision")
			}
		default:
			fail("acts outside the recorded recovery")
		}
		return
	}
	if a.Kind == FinishRecovery || a.Kind == AbortRecovery {
		fail("recovery step without a recorded recovery")
	}
	checkBackupRestoreInvariants(t, d, o, a, fail) // totalloss_test.go

	byID := map[uint64]*Member{}
	voters := 0
	for i := range o.Members {
		m := &o.Members[i]
		byID[m.ID] = m
		if !m.IsLearner {
			voters++
		}
	}
	// A pessimistic, name-based notion of "alive": the member answered and a
	// live pod carrying its (published) name exists.
	podNamed := func(name string) *Pod {
		for i := range o.Pods {
			if o.Pods[i].Name == name {
				return &o.Pods[i]
			}
		}
		return nil
	}
	alive := func(m *Member) bool {
		if !m.Reachable || m.Name == "" {
			return false
		}
		p := podNamed(m.Name)
		return p != nil && (p.MemberID == 0 || p.MemberID == m.ID) && !p.gone()
	}
	aliveVoters := 0
	for i := range o.Members {
		if !o.Members[i].IsLearner && alive(&o.Members[i]) {
			aliveVoters++
		}
	}
	inflight := map[uint64]bool{}
	for _, m := range o.Members {
		if m.IsLearner || m.Name == "" {
			inflight[m.ID] = true
		}
	}
	leader := byID[o.LeaderID]
	leaderAlive := leader != nil && !leader.IsLearner && alive(leader)
	membersKnown := o.MembersKnown && len(o.Members) > 0

	// A rollout (the rollout rule) renews drifted pods only in a fully healthy cluster at its
	// size with nothing in flight, and never while a field is held.
	held, driftedVoter := false, false
	for _, p := range o.Pods {
		held = held || len(p.Drift.Held) > 0
	}
	held = held || TLSRefusal(dd, o) != "" // a refused TLS change holds every restart
	for i := range o.Members {
		if m := &o.Members[i]; !m.IsLearner && alive(m) {
			if p := podNamed(m.Name); p != nil && (p.Drift.NewPod || p.Drift.TLS || (p.Drift.LeaveNode != "" && !o.NoNodeToLeaveTo)) {
				driftedVoter = true
			}
		}
	}
	rolloutReady := len(inflight) == 0 && voters == dd.Size && aliveVoters == voters && leaderAlive
	if a.Kind == PatchPodMetadata {
		p := podNamed(a.Name)
		m := byID[a.ID]
		if p == nil || !p.Drift.Metadata || m == nil || m.Name != a.Name || !rolloutReady {
			fail("patches pod metadata outside a healthy rollout, or of a pod that does not lack it")
		}
		return
	}
	// Turning TLS on (tlsenable.go): a peer URL goes to https only when every voter's
	// pod can dial https peers (step 1 done everywhere), and never the leader's.
	tv := newView(dd, o)
	if a.Kind == UpdatePeerURL {
		m := byID[a.ID]
		if m == nil || m.IsLearner || m.Name != a.Name || a.ID == o.LeaderID || !rolloutReady || held || !dd.PeerTLS || !dd.ClientTLS {
			fail("updates a peer URL of a non-voter, of the leader, outside a healthy cluster, or while a TLS change is held")
		}
		for _, v := range tv.voters {
			if p := podNamed(v.Name); p == nil || !p.PeerTLS || !p.ClientTLS {
				fail("updates a peer URL to https while voter %s cannot dial https peers", v.Name)
			}
		}
		return
	}
	if a.Kind == DeletePod && a.Reason == "CorrectingBootstrap" {
		// Only a pod of a bootstrap that never formed, lacking the spec, whose etcd never
		// ran, while no pod lacking the spec has run etcd; its claim only if never bound.
		p := podNamed(a.Name)
		if o.Bootstrapped || membersKnown || p == nil || p.Deleting || !bootstrapDrift(p.Drift) {
			fail("recreates a pod outside a bootstrap that never formed, or one that does not lack the spec")
		}
		for _, q := range o.Pods {
			if q.MemberID != 0 {
				fail("recreates a bootstrap pod although pod %s belongs to a formed cluster", q.Name)
			}
			if bootstrapDrift(q.Drift) && (q.EtcdRunning || !q.EtcdNeverRan) {
				fail("recreates a bootstrap pod although etcd ran in pod %s, which lacks the spec", q.Name)
			}
		}
		if !a.KeepClaim && (!p.Drift.Claim || !slices.Contains(o.UnboundClaims, a.Name)) {
			fail("deletes a claim that may hold data, or whose spec did not change")
		}
		return
	}
	if a.Kind == DeletePod && a.KeepClaim && a.Reason == "Reconfiguring" && tv.tlsEnabling() > 0 {
		p := podNamed(a.Name)
		m := byID[a.ID]
		if p == nil || p.Deleting || m == nil || m.IsLearner || m.Name != a.Name || !slices.Contains(o.Claims, a.Name) || tv.tlsEnableStep(tv.byID[m.ID]) == 0 {
			fail("recreates for turning TLS on a pod that is not a voter's with a claim and a step to take")
		}
		cutOff := p.PeerTLS && len(m.PeerURLs) > 0 && strings.HasPrefix(m.PeerURLs[0], "https://") && !p.PeerServesTLS
		if held || a.ID == o.LeaderID || (!cutOff && (!rolloutReady || aliveVoters-1 < Quorum(voters))) {
			fail("recreates a pod for turning TLS on outside a healthy cluster that keeps its quorum, or the leader's")
		}
		return
	}
	if a.Kind == DeletePod && a.KeepClaim && a.Reason == "Reconfiguring" {
		p := podNamed(a.Name)
		m := byID[a.ID]
		if p != nil && p.Drift.LeaveNode != "" && !o.NoNodeToLeaveTo {
			fail("recreates on its claim a pod on a cordoned node (the claim may not follow it elsewhere)")
		}
		if p == nil || p.Deleting || !(p.Drift.NewPod || p.Drift.TLS) || m == nil || m.IsLearner || m.Name != a.Name || !slices.Contains(o.Claims, a.Name) {
			fail("recreates for a rollout a pod that is not a drifted voter's with a claim")
		}
		if !rolloutReady || held || aliveVoters-1 < Quorum(voters) || a.ID == o.LeaderID {
			fail("recreates a pod for a rollout outside a healthy cluster that keeps its quorum, or the leader's")
		}
		return
	}
	if dd.Size == 0 && o.BackupRestore == nil {
		// Hibernation (hibernate.go): pods stopped on their claims, and nothing else.
		switch {
		case a.Kind == Wait:
		case a.Kind == DeletePod && a.KeepClaim && a.Reason == "Hibernating":
			if p := podNamed(a.Name); !d.DataOnClaims || p == nil || p.Deleting || !slices.Contains(o.Claims, a.Name) {
				fail("stops a pod for hibernation that is not a running pod with a claim")
			}
			for _, q := range o.Pods {
				if !q.Deleting && !slices.Contains(o.Claims, q.Name) {
					fail("stops a pod for hibernation while pod %s has no claim", q.Name)
				}
			}
		default:
			fail("at size 0 does more than stop pods on their claims")
		}
		return
	}
	if a.Kind == DeletePod && a.KeepClaim {
		// Only a finished pod of a started voter with a claim, named like it; without a
		// member list, of a recorded member with a claim.
		p := podNamed(a.Name)
		m := byID[a.ID]
		isVoter := m != nil && !m.IsLearner && m.Name == a.Name
		if !membersKnown {
			isVoter = a.ID == 0 && slices.Contains(o.KnownMembers, a.Name)
		}
		if p == nil || p.Deleting || (p.Phase != PodFailed && p.Phase != PodSucceeded) || !isVoter || !slices.Contains(o.Claims, a.Name) {
			fail("deletes a pod for recreation that is not a finished pod of a voter with a claim")
		}
		return
	}
	if a.Kind == CreatePod && a.Reason == "RecreatingPod" {
		// A pod back on its member's data: no membership change, so no quorum needed;
		// but only for a member known to be one, with its claim, and no pod of that name.
		if !slices.Contains(o.Claims, a.Name) || podNamed(a.Name) != nil {
			fail("recreates a pod without a claim, or over an existing pod")
		}
		isMember := slices.Contains(o.KnownMembers, a.Name) && !membersKnown
		for _, m := range o.Members {
			if m.Name == a.Name && !m.IsLearner && (a.ID == m.ID) {
				isMember = true
			}
		}
		if !isMember {
			fail("recreates a pod for %s, which is not a known voting member", a.Name)
		}
		return
	}
	if a.IsMembershipChange() || a.Kind == MoveLeader || a.Kind == UpgradeMember || a.Kind == CreatePod || a.Kind == DeletePod {
		if !membersKnown {
			fail("acts on the cluster without a member list")
		}
		// Deleting an orphan or creating the pending member's pod changes
		// no membership: a reachable leader (an authoritative list) is
		// enough. Everything else needs an alive leader.
		switch a.Kind {
		case ForceNewCluster:
		case DeletePod, CreatePod:
			if leader == nil || leader.IsLearner || !leader.Reachable {
				fail("acts on pods without a reachable leader")
			}
		default:
			if !leaderAlive {
				fail("changes the cluster without an alive leader")
			}
		}
	}

	switch a.Kind {
	case Bootstrap:
		if o.Bootstrapped || membersKnown {
			fail("bootstrap of a formed cluster")
		}
		planned := map[string]bool{}
		for _, m := range a.Members {
			planned[m.Name] = true
			if !IsMemberName(d.ClusterName, m.Name) {
				fail("bootstrap member %q outside the cluster's naming", m.Name)
			}
		}
		for _, p := range o.Pods {
			if !planned[p.Name] {
				fail("bootstrap beside pod %s, which is not one of its members", p.Name)
			}
			if p.MemberID != 0 {
				fail("bootstrap although pod %s belongs to a formed cluster", p.Name)
			}
		}
		if len(a.Members) != dd.Size && len(o.BootstrapMembers) == 0 {
			fail("bootstrap with %d members, size %d", len(a.Members), dd.Size)
		}
	case AddLearner:
		if len(inflight) > 0 {
			fail("second membership change while %v in flight", inflight)
		}
		if a.Reason == "Reconfiguring" || a.Reason == "LeavingCordonedNode" {
			if !rolloutReady || held || !driftedVoter {
				fail("adds a learner for a rollout outside a healthy cluster at size with a drifted voter")
			}
		} else if voters >= dd.Size {
			fail("add with %d voters for size %d", voters, dd.Size)
		}
		if aliveVoters != voters {
			fail("add while %d of %d voters are not alive", voters-aliveVoters, voters)
		}
		if a.Name == "" || podNamed(a.Name) != nil || (o.Pending != nil && o.Pending.Name == a.Name) {
			fail("new member name %q in use", a.Name)
		}
		for _, m := range o.Members {
			if m.Name == a.Name {
				fail("new member name %q in use", a.Name)
			}
		}
		for _, n := range o.RetiredNames {
			if n == a.Name {
				fail("reuses retired name %q", a.Name)
			}
		}
	case PromoteLearner:
		m := byID[a.ID]
		if m == nil || !m.IsLearner || !alive(m) {
			fail("promotes something that is not an alive learner")
		}
		if voters >= dd.Size && aliveVoters == voters && !(voters == dd.Size && driftedVoter && !held) {
			fail("promotion beyond size with every voter alive")
		}
		if aliveVoters+1 < Quorum(voters+1) {
			fail("promotion without an alive quorum")
		}
	case RemoveMember, ReplaceMember:
		m := byID[a.ID]
		if m == nil {
			fail("removes an unknown member")
		}
		if len(inflight) > 0 && !inflight[a.ID] {
			fail("removes %x while %v is in flight", a.ID, inflight)
		}
		if a.Kind == ReplaceMember && len(inflight) > 0 {
			fail("replace while a change is in flight")
		}
		votersAfter, aliveAfter := voters, aliveVoters
		if !m.IsLearner {
			votersAfter--
			if alive(m) {
				aliveAfter--
			}
			if m.ID == o.LeaderID {
				fail("removes the leader without moving leadership")
			}
		}
		if votersAfter < 1 || aliveAfter < Quorum(votersAfter) {
			fail("removal leaves %d alive of %d voters", aliveAfter, votersAfter)
		}
		if a.Kind == ReplaceMember && a.Reason == v1beta2.ReasonReplacingCorruptMember {
			checkCorruptReplacement(fail, o, m, voters)
		} else if a.Kind == ReplaceMember {
			if alive(m) {
				fail("replaces an alive member")
			}
			if p := podNamed(m.Name); p != nil && !p.gone() && o.Now.Sub(p.CreatedAt) < dd.ReplaceUnhealthyAfter {
				fail("replaces a member whose pod started %s ago (DNS lag grace)", o.Now.Sub(p.CreatedAt))
			}
		}
		if a.Kind == RemoveMember && !m.IsLearner && m.Name != "" && voters <= dd.Size {
			fail("removes a started voter without scaling down")
		}
	case MoveLeader:
		to := byID[a.To]
		if a.From != o.LeaderID || to == nil || to.IsLearner || !alive(to) || a.To == a.From {
			fail("bad leadership move")
		}
	case DeletePod:
		if !o.Bootstrapped {
			fail("deletes a pod before the cluster was bootstrapped")
		}
		p := podNamed(a.Name)
		if p == nil || p.Deleting {
			fail("deletes a missing or deleting pod")
		}
		if o.Pending != nil && o.Pending.Name == a.Name {
			fail("deletes the pending member's pod")
		}
		for _, m := range o.Members {
			if m.Name != "" && m.Name == p.Name && (p.MemberID == 0 || p.MemberID == m.ID) {
				fail("deletes the pod of member %x", m.ID)
			}
		}
		if m := byID[p.MemberID]; m != nil && m.Name == "" {
			fail("deletes the pod of unstarted member %x", m.ID)
		}
		// A majority of the voters, each in its own list, lists no member for it.
		absent := map[uint64]bool{}
		for _, l := range o.MemberLists {
			if m := byID[l.From]; m == nil || m.IsLearner {
				continue
			}
			has := false
			for _, lm := range l.Members {
				if (p.MemberID != 0 && lm.ID == p.MemberID && (lm.Name == "" || lm.Name == p.Name)) ||
					(p.MemberID == 0 && lm.Name != "" && lm.Name == p.Name) {
					has = true
				}
			}
			if !has {
				absent[l.From] = true
			}
		}
		if len(absent) < Quorum(voters) {
			fail("deletes orphan %s on the word of %d of %d voters", p.Name, len(absent), voters)
		}
	case CreatePod:
		m := byID[a.ID]
		if m == nil || m.Name != "" || podNamed(a.Name) != nil {
			fail("creates a pod for a started member or over an existing pod")
		}
	case UpgradeMember:
		if len(inflight) > 0 || voters != dd.Size || aliveVoters != voters {
			fail("upgrade while not fully healthy at size (%d alive of %d, size %d, in flight %v)", aliveVoters, voters, dd.Size, inflight)
		}
		if err := CheckUpgrade(d, o); err != nil && !downgradeAllowed(d, o) {
			fail("upgrade despite skew: %v", err)
		} else if err != nil && !downgradeUnderway(d, o) {
			fail("downgrades a member before etcd's downgrade is enabled or any member runs the target minor")
		}
		if a.ID == o.LeaderID && voters > 1 {
			fail("upgrades the leader without moving leadership")
		}
	case FixPodImage:
		p := podNamed(a.Name)
		if o.Bootstrapped || membersKnown || p == nil || p.EtcdRunning || p.Image == dd.Image || dd.Image == "" {
			fail("changes a pod's image outside a bootstrap that never formed, or a running one")
		}
		for _, q := range o.Pods {
			if q.MemberID != 0 {
				fail("changes a pod's image although pod %s belongs to a formed cluster", q.Name)
			}
		}
	case ForceNewCluster:
		reachable := 0
		for _, m := range o.Members {
			if !m.IsLearner && m.Reachable {
				reachable++
			}
		}
		if reachable >= Quorum(voters) {
			fail("force-new-cluster while a quorum answers")
		}
		if leader != nil && leader.Reachable && !leader.IsLearner {
			fail("force-new-cluster while the leader answers")
		}
		if m := byID[a.From]; m == nil || !alive(m) {
			fail("force-new-cluster from a member that is not alive")
		}
	case Defragment, Compact, DisarmAlarm, FinishMaintenance:
		checkMaintenance(fail, dd, o, a, alive)
	}
}

func dump(o Observed) string {
	s := fmt.Sprintf("now=%s bootstrapped=%v known=%v leader=%x pending=%+v\n", o.Now.Format(time.TimeOnly), o.Bootstrapped, o.MembersKnown, o.LeaderID, o.Pending)
	for _, m := range o.Members {
		s += fmt.Sprintf("  member %x %q learner=%v reachable=%v idx=%d rev=%d v=%s unhealthy=%s\n", m.ID, m.Name, m.IsLearner, m.Reachable, m.RaftIndex, m.Revision, m.Version, ago(o.Now, m.UnhealthySince))
	}
	for _, p := range o.Pods {
		s += fmt.Sprintf("  pod %s id=%x %s ready=%v crash=%v term=%v del=%v node=%v v=%s created=%s unhealthy=%s drift=%+v\n", p.Name, p.MemberID, p.Phase, p.Ready, p.CrashLooping, p.Terminated, p.Deleting, p.NodeNotReady, p.Version, ago(o.Now, p.CreatedAt), ago(o.Now, p.UnhealthySince), p.Drift)
	}
	return s
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).String() + " ago"
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

func randomAgo(r *rand.Rand, now time.Time) time.Time {
	return now.Add(-pick(r, time.Second, 5*time.Second, 15*time.Second, time.Minute, 2*time.Minute, 10*time.Minute, 2*time.Hour))
}

// randomState makes a plausible but adversarial observation: every field
// varies, including combinations a buggy controller could produce.
func randomState(r *rand.Rand) (Desired, Observed) {
	d := Desired{
		ClusterName:        "c",
		Size:               pick(r, -1, 0, 1, 1, 2, 3, 3, 3, 4, 5, 5, 6, 7),
		Version:            pick(r, v37, v37, v37, v36, "3.7.4", "3.5.21", "3.8.0", "v3.7.3", "bogus"),
		Paused:             r.Intn(10) == 0,
		QuorumLossRecovery: r.Intn(2) == 0,
		DataOnClaims:       r.Intn(2) == 0,
		PeerTLS:            r.Intn(2) == 0,
		ClientTLS:          r.Intn(2) == 0,
	}
	if r.Intn(3) == 0 {
		d.ReplaceUnhealthyAfter = pick(r, 10*time.Second, time.Minute, 5*time.Minute)
		d.ReplaceGoneAfter = pick(r, time.Second, 30*time.Second)
		d.QuorumLossGrace = pick(r, time.Second, time.Minute)
		d.LearnerTimeout = pick(r, 30*time.Second, time.Minute)
	}
	o := Observed{
		Now:          t0,
		Bootstrapped: r.Intn(8) != 0,
		MembersKnown: r.Intn(8) != 0,
		NameSeed:     fmt.Sprint(r.Intn(5)),
	}
	n := r.Intn(9)
	used := map[uint64]bool{}
	var voterIDs []uint64
	for i := 0; i < n; i++ {
		id := uint64(r.Intn(40) + 1)
		if used[id] {
			continue
		}
		used[id] = true
		m := Member{ID: id, IsLearner: r.Intn(6) == 0,
			RaftIndex: uint64(9000 + r.Intn(1200)), Revision: int64(r.Intn(5)),
			Version: pick(r, v37, v37, v36, "3.5.21", "")}
		started := r.Intn(8) != 0
		if started {
			m.Name = mname(id)
			m.Reachable = r.Intn(10) < 7
		}
		if !m.Reachable && r.Intn(4) != 0 {
			m.UnhealthySince = randomAgo(r, o.Now)
		}
		if !m.IsLearner {
			voterIDs = append(voterIDs, id)
		}
		o.Members = append(o.Members, m)
		if r.Intn(7) != 0 {
			p := Pod{Name: m.Name, Phase: pick(r, PodRunning, PodRunning, PodRunning, PodPending, PodFailed, PodUnknown),
				Version: pick(r, m.Version, m.Version, v37, v36), CreatedAt: randomAgo(r, o.Now)}
			if p.Name == "" {
				p.Name = fmt.Sprintf("c-p%d", id)
			}
			if r.Intn(3) != 0 {
				p.MemberID = id
			}
			p.Ready = m.Reachable && r.Intn(8) != 0
			p.CrashLooping = !m.Reachable && r.Intn(3) == 0
			p.Terminated = p.CrashLooping && r.Intn(2) == 0
			p.Deleting = r.Intn(12) == 0
			p.NodeNotReady = r.Intn(12) == 0
			if !p.Ready && r.Intn(3) != 0 {
				p.UnhealthySince = randomAgo(r, o.Now)
			}
			o.Pods = append(o.Pods, p)
		}
	}
	for i := r.Intn(3); i > 0; i-- { // orphans and strays (pod names are unique)
		o.Pods = append(o.Pods, Pod{Name: fmt.Sprintf("c-o%d", i), MemberID: pick(r, 0, uint64(r.Intn(40)+1)),
			Phase: PodRunning, CreatedAt: randomAgo(r, o.Now), Deleting: r.Intn(5) == 0})
	}
	switch {
	case len(voterIDs) > 0 && r.Intn(10) < 7:
		o.LeaderID = pick(r, voterIDs...)
	case r.Intn(2) == 0:
		o.LeaderID = uint64(r.Intn(40) + 1)
	}
	if r.Intn(3) == 0 {
		p := &PendingMember{Name: "c-pend", ID: uint64(r.Intn(40) + 1), AddedAt: randomAgo(r, o.Now)}
		for _, m := range o.Members {
			if (m.IsLearner || m.Name == "") && r.Intn(2) == 0 {
				p.ID = m.ID
				if m.Name != "" {
					p.Name = m.Name
				}
				for _, pd := range o.Pods {
					if pd.MemberID == m.ID {
						p.Name = pd.Name
					}
				}
			}
		}
		o.Pending = p
	}
	if r.Intn(4) == 0 {
		o.RetiredNames = NewMemberNames("c", o.nameSeed(), 2, nil)
	}
	if r.Intn(6) == 0 {
		o.BootstrapMembers = []string{"c-b1", "c-b2", "c-b3"}
		if r.Intn(2) == 0 {
			// The bootstrap's own pods, some on an image the spec no longer names.
			o.Pods = nil
			d.Image = pick(r, "", "etcd:v3.7.3")
			if r.Intn(2) == 0 {
				o.Bootstrapped, o.MembersKnown = false, false
			}
			for _, n := range o.BootstrapMembers[:1+r.Intn(3)] {
				o.Pods = append(o.Pods, Pod{Name: n, Phase: pick(r, PodPending, PodRunning), CreatedAt: randomAgo(r, o.Now),
					Image: pick(r, "etcd:v3.7.3", "etcd:v3.6.99", ""), Version: pick(r, v37, "3.6.99", v36, "3.5.21"),
					EtcdRunning: r.Intn(3) == 0, EtcdNeverRan: r.Intn(2) == 0, MemberID: pick(r, 0, 0, 0, uint64(7)),
					// some created from a spec since corrected (bootstrap.go recreates them)
					Drift: pick(r, Drift{}, Drift{}, Drift{Fields: []string{"pod.nodeSelector"}, NewPod: true}, Drift{Claim: true}, Drift{TLS: true})})
				if r.Intn(2) == 0 {
					o.UnboundClaims = append(o.UnboundClaims, n)
				}
			}
		}
	}
	if r.Intn(3) == 0 {
		// Data claims for some members, and the names recorded in status.
		for _, m := range o.Members {
			if m.Name != "" && r.Intn(2) == 0 {
				o.Claims = append(o.Claims, m.Name)
			}
			if m.Name != "" && r.Intn(3) != 0 {
				o.KnownMembers = append(o.KnownMembers, m.Name)
			}
		}
		if r.Intn(4) == 0 {
			o.Claims = append(o.Claims, "c-stray")
			o.KnownMembers = append(o.KnownMembers, pick(r, "c-stray", "c-other"))
		}
	}
	if r.Intn(8) == 0 {
		// A recorded recovery into the member (or pod) named c-new or another one.
		rec := &Recovery{Source: mname(uint64(r.Intn(40) + 1)), SourceID: uint64(r.Intn(40) + 1),
			Revision: int64(r.Intn(5)), Member: pick(r, "c-new", mname(uint64(r.Intn(40)+1)), "x-new"), StartedAt: randomAgo(r, o.Now),
			Token: pick(r, "tok", "")}
		if r.Intn(2) == 0 {
			o.Pods = append(o.Pods, Pod{Name: "c-new", Phase: pick(r, PodPending, PodRunning, PodFailed), CreatedAt: randomAgo(r, o.Now),
				RecoveryToken: pick(r, "tok", "tok", "", "other")})
		}
		for i := range o.Pods {
			if o.Pods[i].Name == rec.Member && r.Intn(2) == 0 {
				o.Pods[i].RecoveryToken = pick(r, "tok", "other")
			}
		}
		o.Recovery = rec
	}
	if r.Intn(3) == 0 {
		// Pods created from an older spec, some lacking a field a rollout holds.
		for i := range o.Pods {
			switch r.Intn(4) {
			case 0:
				o.Pods[i].Drift = Drift{Fields: []string{"pod.resources"}, NewPod: true, Metadata: r.Intn(2) == 0}
			case 1:
				o.Pods[i].Drift = Drift{Fields: []string{"pod.labels"}, Metadata: true}
			}
			if r.Intn(10) == 0 {
				o.Pods[i].Drift.Held = []string{"pod.ClusterDomain"}
			}
			if r.Intn(8) == 0 {
				o.Pods[i].Drift.Claim = true
			}
			if r.Intn(4) == 0 {
				o.UnboundClaims = append(o.UnboundClaims, o.Pods[i].Name) // never bound
			}
			if r.Intn(6) == 0 {
				// On other TLS Secrets: a rotation, a refused one, or a scheme change.
				o.Pods[i].Drift.TLS = true
				o.Pods[i].PeerTLS, o.Pods[i].ClientTLS = r.Intn(4) > 0, r.Intn(4) > 0
				o.Pods[i].PeerServesTLS, o.Pods[i].ClientPlaintext = r.Intn(2) == 0, r.Intn(2) == 0
				if r.Intn(3) == 0 {
					o.TLSRefused = "does not verify"
				}
			}
		}
	}
	if r.Intn(3) == 0 {
		// Members part-way through turning TLS on: some peer URLs already https.
		for i := range o.Members {
			scheme := pick(r, "http", "https")
			o.Members[i].PeerURLs = []string{scheme + "://" + o.Members[i].Name + ":2380"}
		}
	}
	if r.Intn(4) == 0 {
		// Pods on a cordoned node (a drain), sometimes with no other node to go to.
		for i := range o.Pods {
			if r.Intn(3) == 0 {
				o.Pods[i].Drift.LeaveNode = "n-drained"
			}
		}
		o.NoNodeToLeaveTo = r.Intn(4) == 0
	}
	randomLists(r, &o)
	r.Shuffle(len(o.Members), func(i, j int) { o.Members[i], o.Members[j] = o.Members[j], o.Members[i] })
	r.Shuffle(len(o.Pods), func(i, j int) { o.Pods[i], o.Pods[j] = o.Pods[j], o.Pods[i] })
	return d, o
}

// randomLists gives some members (and strangers) their own member lists: the
// main list, one lagging behind it (an extra member for a pod), one missing
// members, or none. Lists that differ stop every rule (fork.go), so only one
// observation in four gets any: the others exercise the rules behind it.
func randomLists(r *rand.Rand, o *Observed) {
	o.MemberLists = nil
	diverge := r.Intn(4) == 0
	for _, m := range o.Members {
		if !m.Reachable && r.Intn(4) != 0 {
			continue
		}
		ms := append([]Member(nil), o.Members...)
		choice := r.Intn(5)
		if !diverge && choice != 0 {
			choice = 3
		}
		switch choice {
		case 0:
			continue
		case 1:
			if len(o.Pods) > 0 {
				p := pick(r, o.Pods...)
				ms = append(ms, Member{ID: pick(r, p.MemberID, uint64(r.Intn(40)+1)), Name: pick(r, p.Name, "")})
			}
		case 2:
			if len(ms) > 0 {
				i := r.Intn(len(ms))
				ms = append(ms[:i], ms[i+1:]...)
			}
		}
		o.MemberLists = append(o.MemberLists, MemberList{From: pick(r, m.ID, m.ID, m.ID, uint64(r.Intn(40)+1)), Members: ms})
	}
}

// perturbedState starts from a healthy or half-upgraded cluster and applies
// a few realistic faults and in-flight steps, which reaches the interesting
// (non-Wait) actions far more often than fully random states.
func perturbedState(r *rand.Rand) (Desired, Observed) {
	n := 1 + r.Intn(7)
	d := desired(pick(r, n, n, n-1, n+1, n+2, 1, 7))
	d.QuorumLossRecovery = r.Intn(2) == 0
	d.Paused = r.Intn(20) == 0
	if r.Intn(4) == 0 {
		d.Version = pick(r, v36, "3.7.4", "3.8.0", "3.9.0")
	}
	var o Observed
	if r.Intn(3) == 0 {
		var done []uint64
		for id := uint64(1); id <= uint64(n); id++ {
			if r.Intn(2) == 0 {
				done = append(done, id)
			}
		}
		o = upgrading(n, 1, done...)()
	} else {
		o = cluster(n)
	}
	for k := r.Intn(4); k > 0; k-- {
		id := uint64(1 + r.Intn(n))
		if findMember(&o, id) == nil {
			continue // removed by an earlier perturbation
		}
		switch r.Intn(11) {
		case 0:
			if findPod(&o, mname(id)) != nil {
				crashloop(&o, id, randomAgo(r, o.Now))
			}
		case 1:
			unreachable(&o, id, randomAgo(r, o.Now))
		case 2:
			if p := findPod(&o, mname(id)); p != nil {
				dropPod(&o, p.Name)
				mem(&o, id).UnhealthySince = randomAgo(r, o.Now)
			}
		case 3:
			if p := findPod(&o, mname(id)); p != nil {
				p.Deleting = true
				p.UnhealthySince = randomAgo(r, o.Now)
			}
		case 4:
			o.LeaderID = pick(r, uint64(0), id, id)
		case 5:
			if lid := uint64(100 + r.Intn(3)); o.Pending == nil && findMember(&o, lid) == nil {
				withLearner(&o, lid, fmt.Sprintf("c-l%d", lid), r.Intn(2) == 0, r.Intn(2) == 0, r.Intn(3) != 0, uint64(9000+r.Intn(1100)))
				o.Pending.AddedAt = randomAgo(r, o.Now)
				if r.Intn(4) == 0 {
					o.Pending = nil
				}
			}
		case 6:
			o.Pods = append(o.Pods, Pod{Name: fmt.Sprintf("c-orphan%d", r.Intn(1000)), MemberID: uint64(r.Intn(3) * 500),
				Phase: PodRunning, CreatedAt: randomAgo(r, o.Now)})
		case 7:
			if p := findPod(&o, mname(id)); p != nil {
				p.Version = d.Version
			}
		case 8:
			mem(&o, id).RaftIndex += uint64(r.Intn(3))
			mem(&o, id).Revision += int64(r.Intn(3))
		case 9:
			if p := findPod(&o, mname(id)); p != nil {
				p.CreatedAt = randomAgo(r, o.Now)
			}
		case 10:
			if len(o.Members) > 1 && id != o.LeaderID {
				dropMember(&o, id)
			}
		}
	}
	if r.Intn(3) == 0 {
		randomLists(r, &o)
	} else {
		witnessed(&o)
	}
	if r.Intn(5) == 0 && len(o.Pods) > 0 { // a pod not on the current spec: the rollout rule's input
		p := &o.Pods[r.Intn(len(o.Pods))]
		p.Drift = pick(r, Drift{Fields: []string{"pod.labels"}, Metadata: true},
			Drift{Fields: []string{"pod.resources"}, NewPod: true})
	}
	r.Shuffle(len(o.Members), func(i, j int) { o.Members[i], o.Members[j] = o.Members[j], o.Members[i] })
	return d, o
}

func findMember(o *Observed, id uint64) *Member {
	for i := range o.Members {
		if o.Members[i].ID == id {
			return &o.Members[i]
		}
	}
	return nil
}

func findPod(o *Observed, name string) *Pod {
	for i := range o.Pods {
		if o.Pods[i].Name == name {
			return &o.Pods[i]
		}
	}
	return nil
}

// TestPlanProperties checks the invariants on many random observations and
// that the generator reaches every kind of action, so the invariants are
// exercised for each.
func TestPlanProperties(t *testing.T) {
	iterations := 40000
	if testing.Short() {
		iterations = 5000
	}
	seed := int64(20261202)
	if s := os.Getenv("PLANNER_PROPERTY_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("PLANNER_PROPERTY_SEED: %v", err)
		}
	}
	t.Logf("seed %d (set PLANNER_PROPERTY_SEED to vary)", seed)
	r := rand.New(rand.NewSource(seed))
	rs := rand.New(rand.NewSource(seed + 1)) // space and alarms, apart so r's states stay the same
	rv := rand.New(rand.NewSource(seed + 2)) // downgrade, storage and recorded versions, likewise
	seen := map[Kind]int{}
	for i := 0; i < iterations; i++ {
		var d Desired
		var o Observed
		if i%2 == 0 {
			d, o = randomState(r)
		} else {
			d, o = perturbedState(r)
		}
		randomSpace(rs, &d, &o)
		randomVersionState(rv, &o)
		before := dump(o)
		a := Plan(d, o)
		if after := dump(o); after != before {
			t.Fatalf("Plan mutated its input")
		}
		seen[a.Kind]++
		checkInvariants(t, d, o, a)
		s := Summarize(d, o, a)
		if len(s.Conditions) != 4 || s.Phase == "" {
			t.Fatalf("bad summary %+v", s)
		}
		// Every condition says why, True or False: a reason-less condition shows as
		// null to kubectl and to scripts.
		for _, c := range s.Conditions {
			if c.Reason == "" || c.Message == "" {
				t.Fatalf("condition %s (status %v) has reason %q, message %q; want both for %s / %v", c.Type, c.Status, c.Reason, c.Message, dump(o), a)
			}
		}
	}
	for k := Wait; k <= FinishMaintenance; k++ {
		if k == FinishRecovery {
			continue // random records rarely meet a new member serving alone
		}
		if seen[k] == 0 {
			t.Errorf("random states never produced %v; the property test does not cover it", k)
		}
	}
	t.Logf("action mix: %v", seen)
}

// TestPlanConvergesUnderRandomFaults walks random clusters through the
// simulated controller: from any healthy start, with a size change and an
// upgrade, the planner reaches Done within a bounded number of steps
// without ever breaking an invariant.
func TestPlanConvergesUnderRandomFaults(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 300; i++ {
		from, to := 1+r.Intn(7), 1+r.Intn(7)
		d := desired(to)
		o := cluster(from)
		if r.Intn(2) == 0 {
			o = upgrading(from, 1)()
		}
		if from >= 3 && r.Intn(2) == 0 {
			crashloop(&o, uint64(2+r.Intn(from-1)), t0.Add(-time.Hour))
		}
		steps := 0
		for ; steps < 100; steps++ {
			a := Plan(d, o)
			checkInvariants(t, d, o, a)
			if a.Kind == Done {
				break
			}
			o = simulate(t, o, a)
		}
		if steps == 100 {
			t.Fatalf("no convergence from %d to %d: %s", from, to, dump(o))
		}
		if len(o.Members) != to {
			t.Fatalf("converged with %d members, want %d", len(o.Members), to)
		}
	}
}

// downgradeUnderway: etcd's downgrade is enabled, or a member already runs the target
// minor (the cluster version is then at most the target), so a member may restart on
// the target; and no database reports a storage version above the target.
func downgradeUnderway(d Desired, o Observed) bool {
	t, err := ParseVersion(d.Version)
	if err != nil {
		return false
	}
	ok := o.Downgrade != nil
	for _, m := range o.Members {
		if v, err := ParseVersion(m.Version); err == nil && v.Major == t.Major && v.Minor == t.Minor {
			ok = true
		}
		if sv, err := ParseVersion(m.StorageVersion); err == nil && (sv.Major > t.Major || sv.Major == t.Major && sv.Minor > t.Minor) {
			return false
		}
	}
	return ok
}

// randomVersionState adds what the version rules read besides the members' versions:
// etcd's downgrade in progress, the members' storage versions, and the version status
// recorded when they last answered.
func randomVersionState(r *rand.Rand, o *Observed) {
	if r.Intn(4) == 0 {
		o.Downgrade = &Downgrade{Target: pick(r, "3.6.0", "3.5.0", "3.7.0", "bogus")}
	}
	if r.Intn(2) == 0 {
		for i := range o.Members {
			o.Members[i].StorageVersion = pick(r, "", "3.5.0", "3.6.0", "3.7.0")
		}
	}
	if r.Intn(2) == 0 {
		o.RecordedVersion = pick(r, "", v37, v36, "3.5.21", "3.4.35", "bogus")
	}
}

// checkVersionInvariants: the downgrade API is only called as the spec asks, no member
// restarts while another is mid-restart, and members put back on their claims without a
// member list come back on the version recorded (a supported one), not on the spec's.
func checkVersionInvariants(d Desired, o Observed, a Action, fail func(string, ...any)) {
	target, terr := ParseVersion(d.Version)
	switch a.Kind {
	case EnableDowngrade:
		if o.Downgrade != nil || terr != nil {
			fail("enables a downgrade while one is in progress, or to a spec.version that does not parse")
		}
		if a.Version != fmt.Sprintf("%d.%d", target.Major, target.Minor) {
			fail("enables a downgrade to %s, spec.version is %s", a.Version, d.Version)
		}
		above := false
		for _, m := range o.Members {
			if v, err := ParseVersion(m.Version); err == nil && v.Major == target.Major && v.Minor == target.Minor+1 {
				above = true
			}
		}
		if !above {
			fail("enables a downgrade although no member runs the minor above spec.version")
		}
	case CancelDowngrade:
		if o.Downgrade == nil {
			fail("cancels a downgrade etcd does not report")
		}
		if dt, err := ParseVersion(o.Downgrade.Target); err == nil && terr == nil && dt.Major == target.Major && dt.Minor == target.Minor {
			fail("cancels etcd's downgrade to %s, which spec.version %s asks for", o.Downgrade.Target, d.Version)
		}
	case UpgradeMember:
		for _, m := range o.Members {
			if m.IsLearner || m.Name == "" {
				continue
			}
			for _, p := range o.Pods {
				if p.MemberID != m.ID || p.Name != m.Name || p.Deleting {
					continue
				}
				run, rerr := ParseVersion(m.Version)
				spec, serr := ParseVersion(p.Version)
				if rerr == nil && serr == nil && run.Compare(spec) != 0 {
					fail("restarts %s while %s is mid-restart (its pod names %s, it runs %s)", a.Name, m.Name, p.Version, m.Version)
				}
			}
		}
	case CreatePod:
		if a.Reason != "RecreatingPod" || o.MembersKnown {
			break
		}
		if rv, ok := recordedVersion(o); ok && a.Version != rv.String() {
			fail("puts a member back on its claim on %s, not on the recorded %s", a.Version, o.RecordedVersion)
		}
	}
}
