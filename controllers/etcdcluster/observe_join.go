package etcdcluster

import (
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// joiner joins a cluster's pods and what its members answered into the planner's view.
// It reads nothing itself: the API server and etcd were asked before.
type joiner struct {
	health    *healthTracker // since when each member and pod has been unhealthy
	key       string         // the cluster's key in health
	now       time.Time
	nodeReady func(node string) bool
	// nodeCordoned: the node is cordoned, so its member pods move off it; nil: not judged.
	nodeCordoned func(node string) bool
	// drift is how a pod differs from the current spec (act_reconfigure.go); nil: not judged.
	drift func(p *corev1.Pod) planner.Drift
	// marker is the token of a pod's recovery or restore marker when the operator's
	// signature on it verifies (act_marker.go), else ""; nil: no pod's marker is trusted.
	marker func(p *corev1.Pod) string
}

// join fills in o from o.pods, the answers and the endpoint dialled for each pod.
func (j joiner) join(o *observation, ans etcdAnswers, epOfPod map[string]string) {
	statusOf, podOfMember := readStatuses(o, ans.statuses, epOfPod)
	o.members = ans.members
	o.planner.MemberLists = ans.lists
	seen := map[string]bool{}
	if o.members != nil {
		j.joinMembers(o, statusOf, seen)
	}
	j.joinPods(o, podOfMember, seen)
	j.joinAnswers(o, ans.statuses, podOfMember, seen)
	j.health.retain(j.key, seen)
}

// joinAnswers gives the planner what each answering member said of its cluster, and
// since when the answers have disagreed (planner.DetectFork), continuously.
func (j joiner) joinAnswers(o *observation, sts []etcdadmin.EndpointStatus, podOfMember map[uint64]string, seen map[string]bool) {
	for _, st := range sts {
		if st.Err == nil {
			o.planner.Answers = append(o.planner.Answers, planner.ClusterAnswer{Pod: podOfMember[st.MemberID], MemberID: st.MemberID, ClusterID: st.ClusterID})
		}
	}
	sort.Slice(o.planner.Answers, func(a, b int) bool { return o.planner.Answers[a].MemberID < o.planner.Answers[b].MemberID })
	const subject = "fork"
	seen[subject] = true
	since := j.health.observe(j.key, subject, planner.DetectFork(o.planner) == nil, j.now)
	o.planner.ForkSince = since
}

// readStatuses takes the leader and the cluster ID from the members' status answers
// into o, and returns each answering member's status and the pod it answered from.
func readStatuses(o *observation, sts []etcdadmin.EndpointStatus, epOfPod map[string]string) (statusOf map[uint64]etcdadmin.EndpointStatus, podOfMember map[uint64]string) {
	statusOf = map[uint64]etcdadmin.EndpointStatus{}
	podOfMember = map[uint64]string{}
	for _, st := range sts {
		if st.Err != nil {
			continue
		}
		statusOf[st.MemberID] = st
		if st.Leader != 0 && o.planner.LeaderID == 0 {
			o.planner.LeaderID = st.Leader
		}
		if o.clusterID == 0 {
			o.clusterID = st.ClusterID
		}
		if st.IsLeader() {
			o.leaderEP = st.Endpoint
			o.clusterID = st.ClusterID
		}
		for pod, ep := range epOfPod {
			if ep == st.Endpoint {
				podOfMember[st.MemberID] = pod
			}
		}
	}
	return statusOf, podOfMember
}

// joinMembers turns o.members into the planner's members, with what each said of itself.
func (j joiner) joinMembers(o *observation, statusOf map[uint64]etcdadmin.EndpointStatus, seen map[string]bool) {
	o.planner.MembersKnown = true
	o.planner.Bootstrapped = true
	for _, m := range o.members {
		name := memberName(m)
		st, reachable := statusOf[m.ID]
		pm := planner.Member{
			ID: m.ID, Name: name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner,
			Reachable: reachable,
		}
		if reachable {
			pm.RaftIndex, pm.Revision, pm.Version, pm.StorageVersion = st.RaftIndex, st.Revision, st.Version, st.StorageVersion
			pm.AppliedIndex = st.RaftAppliedIndex
			pm.LeaderUnknown = st.Leader == 0
			pm.DBSize, pm.DBSizeInUse, pm.DBQuota = st.DBSize, st.DBSizeInUse, st.DBSizeQuota
		}
		subject := "member/" + etcdadmin.FormatID(m.ID)
		seen[subject] = true
		pm.UnhealthySince = j.health.observe(j.key, subject, reachable, j.now)
		o.planner.Members = append(o.planner.Members, pm)

		// A learner the operator added whose pending record was lost (operator stopped
		// between MemberAdd and the status write) is adopted, not duplicated.
		if m.IsLearner && !m.Started() && o.planner.Pending == nil && name != "" {
			o.planner.Pending = &planner.PendingMember{Name: name, ID: m.ID, AddedAt: j.now}
		}
	}
}

// joinPods turns o.pods into the planner's pods, sorted by name. A pod's member is the
// one that answered from it, else the one its annotation names.
func (j joiner) joinPods(o *observation, podOfMember map[uint64]string, seen map[string]bool) {
	for _, p := range o.pods {
		mid := memberIDAnnotation(p)
		for id, pod := range podOfMember {
			if pod == p.Name {
				mid = id
			}
		}
		pp := planner.Pod{
			Name:         p.Name,
			MemberID:     mid,
			Phase:        planner.PodPhase(p.Status.Phase),
			Ready:        podReady(p),
			Deleting:     p.DeletionTimestamp != nil,
			Version:      render.NormalizeVersion(p.Annotations[render.AnnotationVersion]),
			CreatedAt:    p.CreationTimestamp.Time,
			NodeNotReady: p.Spec.NodeName != "" && !j.nodeReady(p.Spec.NodeName),
		}
		pp.Terminated, pp.CrashLooping = etcdContainerState(p)
		pp.Image, pp.EtcdRunning, pp.EtcdNeverRan = etcdContainerFacts(p)
		pp.SnapshotCount, pp.SnapshotCountUnread = podSnapshotCount(p) // status_versionsince.go
		if j.marker != nil {
			pp.RecoveryToken = j.marker(p)
		}
		pp.PeerTLS = render.PodSecretVolume(p, volumePeerTLS) != ""
		pp.ClientTLS = render.ServesTLSClients(p)
		pp.PeerServesTLS, pp.ClientPlaintext = peerServesTLS(p), servesPlaintextClients(p) // act_tlsenable.go
		if j.drift != nil {
			pp.Drift = j.drift(p)
		}
		if j.nodeCordoned != nil && p.Spec.NodeName != "" && j.nodeCordoned(p.Spec.NodeName) {
			pp.Drift.LeaveNode = p.Spec.NodeName
		}
		subject := "pod/" + p.Name
		seen[subject] = true
		pp.UnhealthySince = j.health.observe(j.key, subject, pp.Ready, j.now)
		o.planner.Pods = append(o.planner.Pods, pp)
	}
	sort.Slice(o.planner.Pods, func(i, j int) bool { return o.planner.Pods[i].Name < o.planner.Pods[j].Name })
}

// memberName is a member's name, or for one not started yet the name in its peer URL,
// which the operator chose.
func memberName(m etcdadmin.Member) string {
	if m.Name != "" {
		return m.Name
	}
	return memberNameFromPeerURLs(m.PeerURLs)
}

// memberNameFromPeerURLs recovers a member's name from the peer URL the operator gave it:
// <scheme>://<name>.<cluster>.<ns>.svc[.<domain>]:2380.
func memberNameFromPeerURLs(urls []string) string {
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			continue
		}
		host := u.Hostname()
		if net.ParseIP(host) != nil {
			continue
		}
		if name, _, ok := strings.Cut(host, "."); ok && name != "" {
			return name
		}
	}
	return ""
}

func memberIDAnnotation(p *corev1.Pod) uint64 {
	if v := p.Annotations[render.AnnotationMemberID]; v != "" {
		if id, err := etcdadmin.ParseID(v); err == nil {
			return id
		}
	}
	return 0
}
