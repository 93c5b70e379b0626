package etcdcluster

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// errMemberPodGone ends an observation that was asking etcd when one of the cluster's
// member pods was deleted: what it would report is already stale, and its calls may wait
// out an election for seconds (the dead member led). The reconcile ends without planning
// or acting, and the next one (queued by the same pod event) starts from the cache that
// shows the pod gone, reporting it at once (status_membergone.go).
var errMemberPodGone = errors.New("a member pod was deleted while etcd was being asked; observing again")

// observationsInFlight holds the cancel of each cluster's observation while it asks
// etcd, so that a member pod's deletion can cut it short. At most one reconcile of a
// cluster runs at a time (the workqueue never hands out a key twice), so one slot per
// cluster suffices; the slot lives only as long as the calls.
//
// A cluster's observation is cut short at most once per interruptEvery: whoever can
// create and delete pods labelled and owned like its members (a tenant of its namespace)
// could otherwise delete one in a loop and keep every observation from ending, so that
// the operator never acted on the cluster again.
type observationsInFlight struct {
	mu     sync.Mutex
	cancel map[string]context.CancelCauseFunc
	// last is when each cluster's observation was last cut short; forgotten with the
	// cluster (memory.go).
	last map[string]time.Time
}

// interruptEvery bounds how often one cluster's observation is cut short.
const interruptEvery = 10 * time.Second

// begin returns the context the observation's etcd calls use and the function that ends
// them, which reports whether a member pod's deletion interrupted them.
func (f *observationsInFlight) begin(ctx context.Context, key string) (context.Context, func() (interrupted bool)) {
	cctx, cancel := context.WithCancelCause(ctx)
	f.mu.Lock()
	if f.cancel == nil {
		f.cancel = map[string]context.CancelCauseFunc{}
	}
	f.cancel[key] = cancel
	f.mu.Unlock()
	return cctx, func() bool {
		f.mu.Lock()
		delete(f.cancel, key)
		f.mu.Unlock()
		interrupted := errors.Is(context.Cause(cctx), errMemberPodGone)
		cancel(context.Canceled)
		return interrupted
	}
}

// interrupt cuts short the observation of cluster key under way, if any, unless one of
// its observations was cut short less than interruptEvery before now.
func (f *observationsInFlight) interrupt(key string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cancel, ok := f.cancel[key]
	if !ok || now.Sub(f.last[key]) < interruptEvery {
		return
	}
	if f.last == nil {
		f.last = map[string]time.Time{}
	}
	f.last[key] = now
	cancel(errMemberPodGone)
}

// forget drops what is kept of cluster key. Its slot, too: forget runs in a reconcile of
// the cluster, when none of its observations can be under way.
func (f *observationsInFlight) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.last, key)
	delete(f.cancel, key)
}

// interruptOnMemberPodGone is the owned pods' predicate: it lets every event through
// (each still queues its cluster) and, on the way, interrupts the observation of the
// cluster whose member pod was deleted or began terminating.
func (r *Reconciler) interruptOnMemberPodGone() predicate.Funcs {
	gone := func(p metav1.Object) {
		if key, ok := owningCluster(p); ok {
			r.inflight.interrupt(key, r.Now())
		}
	}
	return predicate.Funcs{
		DeleteFunc: func(e event.DeleteEvent) bool {
			gone(e.Object)
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil {
				gone(e.ObjectNew)
			}
			return true
		},
	}
}

// owningCluster is the namespace/name of the EtcdCluster controlling pod p.
func owningCluster(p metav1.Object) (string, bool) {
	if _, isPod := p.(*corev1.Pod); !isPod {
		return "", false
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "EtcdCluster" || !isEtcdGroup(ref.APIVersion) {
		return "", false
	}
	return p.GetNamespace() + "/" + ref.Name, true
}

// isEtcdGroup: apiVersion is one of the EtcdCluster's group (v1 or v1beta2).
func isEtcdGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == etcdv1beta2.GroupVersion.Group
}
