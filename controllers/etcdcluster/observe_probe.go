package etcdcluster

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// How long the operator waits for one member's status answer.
//
// etcd opens its client listener before it serves: a member still starting (joining,
// replaying its log, waiting for its peers' names) accepts the connection and answers
// nothing, so its probe always runs to the end of its bound. With the client's 2 s
// (ProbeTimeout) for every member, each reconcile of a cluster growing or replacing a
// member waited 2 s on it (BenchmarkScale's reconcile p99 under churn, 2.2–2.4 s).
//
// startingProbeTimeout is the bound for a member that cannot be serving yet, and 0 (the
// client's ProbeTimeout) for every other: a slow but serving member keeps the long bound,
// so that load is not taken for absence. A probe cut short is never proof of anything:
// a member that did not answer is "not reachable in this observation" either way, and
// every step the planner takes on that runs on graces of seconds to minutes (the pod
// being gone, ReplaceUnhealthyAfter, LearnerTimeout, QuorumLossGrace), which a starting
// member ends as soon as it serves and its pod turns Ready. The one decision taken on a
// single observation's answers, the survivor of a quorum-loss recovery, is taken only
// without quorum from a member list, and then every member cut short is asked again with
// the long bound (askMembersQuorum).
const startingProbeTimeout = 400 * time.Millisecond

// probeTimeout is the status probe bound of pod's member: startingProbeTimeout while the
// member is still starting, 0 (ProbeTimeout) otherwise. Starting is all of:
//   - the pod is not Ready;
//   - its etcd process has never been Ready: the kubelet has not reported the pod Ready
//     since that process started (etcdNeverReady). A member whose pod was Ready and turned
//     unready (overloaded, or its cluster lost quorum: /readyz needs a leader) keeps the
//     long bound;
//   - it has not answered this operator's client since its endpoint was dialled
//     (answered; etcdadmin.Admin.Answered). A learner is never Ready (/readyz refuses
//     learners), so this is what gives a learner that serves the long bound.
func probeTimeout(p *corev1.Pod, answered bool) time.Duration {
	if answered || podReady(p) || !etcdNeverReady(p) {
		return 0
	}
	return startingProbeTimeout
}

// etcdNeverReady reports that the pod has not been Ready since its etcd container last
// started: it has no Ready condition, or the condition last changed no later than the
// container's start (the kubelet sets it False before the container runs, and True
// only on a readiness probe that passed after). Kubernetes times are whole seconds; a
// process Ready and unready again within the second it started is not told apart.
func etcdNeverReady(p *corev1.Pod) bool {
	var ready *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			ready = &p.Status.Conditions[i]
		}
	}
	if ready == nil {
		return true
	}
	if ready.Status == corev1.ConditionTrue {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == render.ContainerName && cs.State.Running != nil {
			return !ready.LastTransitionTime.After(cs.State.Running.StartedAt.Time)
		}
	}
	// No running etcd container reported: nothing of it can have been Ready.
	return true
}

// probeBounds is each dialled endpoint's status probe bound (probeTimeout of its pod), for
// etcdadmin.Admin.StatusWithin; nil (every probe the full ProbeTimeout) while the cluster
// has not formed (status.bootstrapped false). The short bound is for a formed cluster's
// new and replaced members: BenchmarkScale at 100 clusters created at once measured the
// initial members' pods Ready in 30 s (p50) with it against 17 s without it, in runs
// beside each other (1.80× the static path against 1.28×; the mechanism is not found),
// while the churn it is for (a formed cluster growing) needs it.
func probeBounds(admin *etcdadmin.Admin, formed bool, pods map[string]*corev1.Pod, epOfPod map[string]string) func(endpoint string) time.Duration {
	if !formed {
		return nil
	}
	bound := map[string]time.Duration{}
	for name, ep := range epOfPod {
		if p := pods[name]; p != nil {
			bound[ep] = probeTimeout(p, admin.Answered(ep))
		}
	}
	return func(ep string) time.Duration { return bound[ep] }
}
