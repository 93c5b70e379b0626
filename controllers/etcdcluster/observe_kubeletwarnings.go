package etcdcluster

import (
	"context"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// kubeletWarnings reads, for each member pod the kubelet has been setting up for at least
// setupWarningAfter (bound to a node, no container running, nothing wrong in its
// statuses), the newest set-up warning the kubelet recorded as an event. A real kubelet
// says "ContainerCreating" for a pod whose TLS Secret does not exist and explains why only
// in a FailedMount event; without this, status would say the pod is merely starting.
// Events are read uncached and only for such pods, so a healthy cluster costs nothing,
// and a pod's are read again only after an interval that doubles from setupWarningAfter
// up to setupReadMaxEvery (memory_setupreads.go): meanwhile the last read's finding
// stands. A failed read is logged and leaves the pod without a warning: it must not stop
// the reconcile. due is when the youngest pod skipped for its age reaches
// setupWarningAfter (zero if none was): the reconcile is to come back by then. cluster
// is the cluster's namespace/name.
func (r *Reconciler) kubeletWarnings(ctx context.Context, cluster string, pods map[string]*corev1.Pod) (out map[string]*kubeletWarning, due time.Time) {
	now := r.Now()
	read := map[string]bool{} // the pods whose reads are remembered, by key
	found := func(name string, w *kubeletWarning) {
		if w == nil {
			return
		}
		if out == nil {
			out = map[string]*kubeletWarning{}
		}
		out[name] = w
	}
	for name, p := range pods {
		if !beingSetUp(p) {
			continue
		}
		// Every pod spends a moment being set up; its events are read only once that
		// lasts. A namespace's events are not cached by the API server, so each read is
		// a scan of all of them in etcd: a fleet created at once read them 3-6 times per
		// member pod (BenchmarkScale), on the API server its new pods wait on.
		if at := setUpSince(p).Add(setupWarningAfter); now.Before(at) {
			if due.IsZero() || at.Before(due) {
				due = at
			}
			continue
		}
		key := cluster + "/" + string(p.UID)
		read[key] = true
		last, seen := r.setupReads.get(key)
		if seen && now.Before(last.next) {
			found(name, last.warning)
			continue
		}
		every := setupWarningAfter
		if seen {
			every = min(2*last.every, setupReadMaxEvery)
		}
		var evs corev1.EventList
		if err := r.freshReader().List(ctx, &evs, client.InNamespace(p.Namespace),
			client.MatchingFields{"involvedObject.uid": string(p.UID)}); err != nil {
			log.FromContext(ctx).V(1).Info("cannot read the pod's events", "pod", name, "error", err.Error())
			r.setupReads.put(key, setupRead{next: now.Add(every), every: every})
			continue
		}
		w := setupWarning(evs.Items)
		r.setupReads.put(key, setupRead{next: now.Add(every), every: every, warning: w})
		found(name, w)
	}
	r.setupReads.keepOnly(cluster, read)
	return out, due
}

// setupReadMaxEvery bounds the interval between two reads of a starting pod's events: a
// warning that changes (another Secret missing) shows within it.
const setupReadMaxEvery = time.Minute

// setupWarningAfter is how long a pod is set up before its set-up warnings are read:
// longer than the kubelet takes to start a pod whose volumes mount, even on a busy node,
// and short beside the tens of seconds in which a stuck pod is to be reported.
const setupWarningAfter = 10 * time.Second

// setUpSince is when the pod was bound to its node (its PodScheduled condition), else
// when it was created.
func setUpSince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// beingSetUp: bound to a node, not being deleted, and no container has started or
// reported a problem of its own.
func beingSetUp(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodPending {
		return false
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return false
		}
		if w := cs.State.Waiting; w != nil && !benignWaiting[w.Reason] {
			return false
		}
	}
	return true
}

// setupWarning is the kubelet's set-up warnings, newest first: its reason, and the
// distinct messages joined (a pod with two missing Secrets gets one FailedMount event per
// volume, and which comes last is chance). nil if there is none.
func setupWarning(evs []corev1.Event) *kubeletWarning {
	var ws []corev1.Event
	for _, e := range evs {
		if e.Type == corev1.EventTypeWarning && setupWarningReasons[e.Reason] {
			ws = append(ws, e)
		}
	}
	if len(ws) == 0 {
		return nil
	}
	sort.SliceStable(ws, func(i, j int) bool { return eventTime(ws[i]).After(eventTime(ws[j])) })
	var msgs []string
	seen := map[string]bool{}
	for _, e := range ws {
		if !seen[e.Message] {
			seen[e.Message] = true
			msgs = append(msgs, e.Message)
		}
	}
	return &kubeletWarning{Reason: ws[0].Reason, Message: strings.Join(msgs, "; ")}
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
