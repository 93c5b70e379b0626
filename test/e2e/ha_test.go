package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// takeoverWithin bounds how long the surviving replica needs to finish a step: the
// lease runs out (6 s on the test replicas), then the step's own time.
const takeoverWithin = 3 * time.Minute

// killPoint blocks the leading replica once, right after a chosen step succeeded (or a
// backup was stored), until the test kills that replica: the step is done, nothing the
// operator would write after it is.
type killPoint struct {
	cluster string
	mu      sync.Mutex
	kinds   []planner.Kind // armed step kinds, each fires once
	backup  bool           // armed for the next stored backup
	hit     chan killed
}

// killed is where a kill point stopped the leader: the step, and the member it was for.
type killed struct{ step, member string }

func newKillPoint(cluster string) *killPoint {
	return &killPoint{cluster: "default/" + cluster, hit: make(chan killed, 1)}
}

func (k *killPoint) armSteps(kinds ...planner.Kind) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kinds = kinds
}

func (k *killPoint) armBackup() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.backup = true
}

func (k *killPoint) afterAction(ctx context.Context, cluster string, a planner.Action) {
	k.mu.Lock()
	i := slices.Index(k.kinds, a.Kind)
	fire := cluster == k.cluster && i >= 0
	if fire {
		k.kinds = slices.Delete(k.kinds, i, i+1)
		// Sent under the lock, so that once disarm returns no hit is still on its way
		// (the channel has room: one hit at a time, each consumed before the next).
		k.hit <- killed{step: a.String(), member: a.Name}
	}
	k.mu.Unlock()
	if fire {
		<-ctx.Done() // killed: nothing after the step runs
	}
}

func (k *killPoint) afterBackupStored(ctx context.Context, _ string, location string) {
	k.mu.Lock()
	fire := k.backup
	k.backup = false
	if fire {
		k.hit <- killed{step: "stored " + location}
	}
	k.mu.Unlock()
	if fire {
		<-ctx.Done()
	}
}

// disarm drops the armed steps and returns a hit that came before, if any.
func (k *killPoint) disarm() (killed, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kinds, k.backup = nil, false
	select {
	case at := <-k.hit:
		return at, true
	default:
		return killed{}, false
	}
}

// killLeaderIfHit is killLeaderAtHit for a step the operator may not need to take: if
// settled reports the work done before the kill point is reached, the point is disarmed
// and false returned.
func killLeaderIfHit(t *testing.T, e *framework.Env, rs *framework.Replicas, k *killPoint, what string, settled func() error) bool {
	t.Helper()
	deadline := time.Now().Add(takeoverWithin)
	for time.Now().Before(deadline) {
		select {
		case at := <-k.hit:
			k.hit <- at // for killLeaderAtHit
			killLeaderAtHit(t, e, rs, k, what)
			return true
		case <-time.After(framework.PollInterval):
		}
		if settled() == nil {
			if at, ok := k.disarm(); ok {
				k.hit <- at
				killLeaderAtHit(t, e, rs, k, what)
				return true
			}
			t.Logf("%s: not needed, the work was done without it", what)
			return false
		}
	}
	e.DumpState()
	t.Fatalf("%s: neither reached nor settled within %v", what, takeoverWithin)
	return false
}

// killLeaderAtHit waits for the kill point, kills the replica blocked in it and
// returns the step it was killed after, once another replica leads.
func killLeaderAtHit(t *testing.T, e *framework.Env, rs *framework.Replicas, k *killPoint, what string) killed {
	t.Helper()
	var at killed
	select {
	case at = <-k.hit:
	case <-time.After(takeoverWithin):
		e.DumpState()
		t.Fatalf("%s: the leader never reached the kill point", what)
	}
	start := time.Now()
	dead, next := rs.KillLeader(time.Minute)
	t.Logf("%s: killed %s after %s; %s leads %.1fs later", what, dead.Name, at.step, next.Name, time.Since(start).Seconds())
	if dead == next {
		t.Fatalf("%s: the killed replica still leads", what)
	}
	return at
}

// TestLeaderKilledMidStep runs two operator replicas with leader election and kills the
// leader right after a step, before it records anything, at every membership step:
// Bootstrap; AddLearner and PromoteLearner of a scale-up; ReplaceMember and AddLearner of
// a dead member's replacement; UpgradeMember and MoveLeader of an upgrade; RemoveMember
// of a scale-down; and after a periodic backup's object was stored. Each time the other
// replica takes over once the lease expires and finishes the step exactly once: never
// two learners or more members than the size plus one, the learner the killed leader
// added is the one that joins, no learner left over, one backup object for the run,
// every acknowledged write kept, and the final size and version right.
func TestLeaderKilledMidStep(t *testing.T) {
	e := framework.Setup(t)
	b := startBackupStore(t, e)
	const name = "ha"
	k := newKillPoint(name)
	e.StopOperatorNow()
	e.AfterAction, e.AfterBackupStored = k.afterAction, k.afterBackupStored
	t.Cleanup(func() { e.AfterAction, e.AfterBackupStored = nil, nil })
	rs := e.StartReplicas(2)
	rs.Leader(time.Minute)

	// Bootstrap: killed right after the initial members' pods were created.
	k.armSteps(planner.Bootstrap)
	e.Create(newCluster(name, 3))
	killLeaderAtHit(t, e, rs, k, "bootstrap")
	e.WaitAvailable(name, 3, takeoverWithin)
	if ps := e.MemberPods(name); len(ps) != 3 {
		t.Errorf("%d member pods after an interrupted bootstrap, want 3", len(ps))
	}
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)
	mon := monitorMembership(e, name)

	// Scale-up: killed right after the learner was added, and again after its promotion.
	k.armSteps(planner.AddLearner, planner.PromoteLearner)
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
	at := killLeaderAtHit(t, e, rs, k, "scale-up")
	promoted := killLeaderAtHit(t, e, rs, k, "scale-up promotion")
	e.WaitAvailable(name, 4, takeoverWithin)
	requireMember(t, e, name, at.member)
	if promoted.member != at.member {
		t.Errorf("promoted %s, but the learner added was %s", promoted.member, at.member)
	}

	// Replacement of a dead member: killed right after its successor was added.
	pods := e.MemberPods(name)
	var victim string
	for n := range pods {
		victim = n
		break
	}
	gone := memberByName(t, e, name, victim)
	k.armSteps(planner.ReplaceMember, planner.AddLearner)
	p := pods[victim]
	if err := e.C.Delete(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	killLeaderAtHit(t, e, rs, k, "replacement removal")
	at = killLeaderAtHit(t, e, rs, k, "replacement")
	e.Eventually(takeoverWithin, "the dead member replaced", func() error {
		ms, err := e.Members(name)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.ID == gone.ID {
				return fmt.Errorf("dead member %s still listed", victim)
			}
		}
		return allVoters(ms, 4)
	})
	requireMember(t, e, name, at.member)
	e.WaitAvailable(name, 4, takeoverWithin)

	// Upgrade: killed right after one member was restarted on the new image, and again
	// after leadership was moved off the leader before its restart.
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	k.armSteps(planner.UpgradeMember, planner.MoveLeader)
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = "3.7.3" })
	killLeaderAtHit(t, e, rs, k, "upgrade")
	upgraded := func() error {
		c := e.Cluster(name)
		if c.Status.CurrentVersion != "3.7.3" || c.Status.TargetVersion != "" {
			return fmt.Errorf("currentVersion=%q targetVersion=%q", c.Status.CurrentVersion, c.Status.TargetVersion)
		}
		for pod, st := range e.MemberStatuses(name) {
			if st.Version != "3.7.3" {
				return fmt.Errorf("%s runs %s", pod, st.Version)
			}
		}
		return nil
	}
	// An election of its own can put leadership on an upgraded member, and then no move
	// is needed; it is taken in practice (the followers restart first).
	killLeaderIfHit(t, e, rs, k, "upgrade leader move", upgraded)
	e.Eventually(takeoverWithin, "status currentVersion 3.7.3", upgraded)
	after, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(framework.MemberIDs(before), framework.MemberIDs(after)) {
		t.Errorf("members replaced during the in-place upgrade: %v → %v", framework.MemberIDs(before), framework.MemberIDs(after))
	}

	// Scale-down: killed right after a member was removed (with its pod).
	k.armSteps(planner.RemoveMember)
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 3 })
	killLeaderAtHit(t, e, rs, k, "scale-down")
	e.WaitAvailable(name, 3, takeoverWithin)

	// Backup: killed right after the run's object was stored, before status says so.
	k.armBackup()
	eb := b.newBackup("ha-hourly", name, "ha/hourly", "aws", &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3600, MaxBackups: 5})
	e.Create(eb)
	killLeaderAtHit(t, e, rs, k, "backup")
	got := b.waitCondition(t, eb.Name, metav1.ConditionTrue, etcdv1beta2.ReasonBackupSucceeded, takeoverWithin)
	objs, err := b.store.List(context.Background(), "ha/hourly")
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, o := range objs {
		if _, _, ok := backup.ParsePeriodicKey("ha/hourly", o.Key); ok {
			runs = append(runs, o.Key)
		}
	}
	if len(runs) != 1 {
		t.Errorf("%d backup objects for one scheduled run: %v", len(runs), runs)
	}
	if len(got.Status.Backups) != 1 || len(runs) == 1 && got.Status.Backups[0].Key != runs[0] {
		t.Errorf("status.backups %+v, want the one stored object %v", got.Status.Backups, runs)
	}

	// Final state: size, version, no leftover learner, every member with a pod, no lost write.
	e.WaitAvailable(name, 3, 60*time.Second)
	flowing(t, load, 2*loadRate)
	verifyLoad(t, load)
	m := mon.finish()
	m.mu.Lock()
	t.Logf("membership samples=%d maxLearners=%d maxMembers=%d", m.samples, m.maxLearners, m.maxMembers)
	if m.samples == 0 || m.maxLearners > 1 || m.maxMembers > 4 {
		t.Errorf("a step was done twice: maxLearners=%d maxMembers=%d (size at most 4; samples %d)", m.maxLearners, m.maxMembers, m.samples)
	}
	m.mu.Unlock()
	ms, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := allVoters(ms, 3); err != nil {
		t.Error(err)
	}
	ps := e.MemberPods(name)
	for _, x := range ms {
		if _, ok := ps[x.Name]; !ok {
			t.Errorf("member %s has no pod", x.Name)
		}
	}
	if len(ps) != 3 {
		t.Errorf("%d member pods, want 3", len(ps))
	}
	if c := e.Cluster(name); c.Status.CurrentVersion != "3.7.3" || c.Status.Size != 3 {
		t.Errorf("status currentVersion %q size %d, want 3.7.3 and 3", c.Status.CurrentVersion, c.Status.Size)
	}
	var orphans []string
	for n, p := range ps {
		if p.Status.Phase == corev1.PodFailed {
			orphans = append(orphans, n)
		}
	}
	if len(orphans) > 0 {
		t.Errorf("failed member pods left: %v", orphans)
	}
}

func requireMember(t *testing.T, e *framework.Env, cluster, member string) {
	t.Helper()
	if member == "" {
		t.Errorf("the interrupted AddLearner named no member")
		return
	}
	ms, err := e.Members(cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Name == member && !m.IsLearner {
			return
		}
	}
	t.Errorf("the learner the killed leader added (%s) is not a voter now: another was added instead", member)
}

func allVoters(ms []*framework.EtcdMember, size int) error {
	voters := 0
	for _, m := range ms {
		if m.IsLearner {
			return fmt.Errorf("learner %s (%x) left", m.Name, m.ID)
		}
		voters++
	}
	if voters != size {
		return fmt.Errorf("%d voters, want %d", voters, size)
	}
	return nil
}

// TestKillPointFiresOncePerArmedStep checks the kill point itself (no bench): each armed
// step blocks once, until its context ends; other clusters and unarmed steps pass; a
// disarmed point fires no more and hands back a hit that came before.
func TestKillPointFiresOncePerArmedStep(t *testing.T) {
	k := newKillPoint("c")
	k.armSteps(planner.AddLearner, planner.MoveLeader)
	add := planner.Action{Kind: planner.AddLearner, Name: "c-new"}
	k.afterAction(context.Background(), "default/other", add) // another cluster: passes
	k.afterAction(context.Background(), "default/c", planner.Action{Kind: planner.PromoteLearner})
	ctx, kill := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		k.afterAction(ctx, "default/c", add)
	}()
	at := <-k.hit
	if at.member != "c-new" || !strings.HasPrefix(at.step, "AddLearner") {
		t.Errorf("hit %+v, want the AddLearner of c-new", at)
	}
	select {
	case <-returned:
		t.Fatal("the armed step did not block until its context ended")
	case <-time.After(100 * time.Millisecond):
	}
	kill()
	<-returned
	k.afterAction(context.Background(), "default/c", add) // fired once already: passes

	// A hit before disarm is handed back; after it, nothing fires.
	k.afterAction(ctx, "default/c", planner.Action{Kind: planner.MoveLeader}) // fires; ctx is done, so it returns
	if got, ok := k.disarm(); !ok || !strings.HasPrefix(got.step, "MoveLeader") {
		t.Fatalf("disarm returned %+v, %v; want the MoveLeader hit", got, ok)
	}
	k.armSteps(planner.MoveLeader)
	k.disarm()
	k.afterAction(context.Background(), "default/c", planner.Action{Kind: planner.MoveLeader}) // disarmed: passes
	if _, ok := k.disarm(); ok {
		t.Error("a disarmed kill point fired")
	}
}
