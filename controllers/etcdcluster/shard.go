package etcdcluster

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Shard splits a fleet of EtcdClusters between operator instances by the value of one
// label or annotation of each cluster (--shard-key, --shard): an instance manages only
// the clusters whose value is its own, so each cluster has exactly one instance acting on
// it while several run. A cluster whose value changes is released by the instance it
// leaves (it stops acting and forgets what it kept; nothing is deleted or restarted) and
// taken over in place by the one it joins, as a restarted operator would take it.
//
// The zero Shard (no key) manages every cluster, as before sharding existed.
type Shard struct {
	// Key is the label or annotation whose value names a cluster's shard. A label wins
	// over an annotation of the same key.
	Key string
	// Value is this instance's shard.
	Value string
	// Default makes this instance also manage the clusters without the key (exactly
	// one instance of a fleet should), so that a cluster created without it is not left
	// to nobody.
	Default bool
}

// ParseShard checks the --shard-key, --shard and --shard-default flags. The key must be
// a valid label or annotation key (a qualified name), the value a DNS label: it names
// the instance's leader-election Lease (LeaseID).
func ParseShard(key, value string, dflt bool) (Shard, error) {
	if key == "" {
		if value != "" || dflt {
			return Shard{}, fmt.Errorf("--shard and --shard-default need --shard-key")
		}
		return Shard{}, nil
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return Shard{}, fmt.Errorf("--shard-key %q: %s", key, strings.Join(errs, "; "))
	}
	if value == "" {
		return Shard{}, fmt.Errorf("--shard-key %q needs --shard, this instance's value of it", key)
	}
	if errs := validation.IsDNS1123Label(value); len(errs) > 0 {
		return Shard{}, fmt.Errorf("--shard %q: %s", value, strings.Join(errs, "; "))
	}
	return Shard{Key: key, Value: value, Default: dflt}, nil
}

// Enabled reports whether the fleet is sharded.
func (s Shard) Enabled() bool { return s.Key != "" }

// Of is the shard a cluster with these labels and annotations belongs to, and whether it
// names one at all.
func (s Shard) Of(labels, annotations map[string]string) (string, bool) {
	if v, ok := labels[s.Key]; ok {
		return v, true
	}
	v, ok := annotations[s.Key]
	return v, ok
}

// Manages reports whether this instance manages a cluster with these labels and
// annotations.
func (s Shard) Manages(labels, annotations map[string]string) bool {
	if !s.Enabled() {
		return true
	}
	v, ok := s.Of(labels, annotations)
	if !ok {
		return s.Default
	}
	return v == s.Value
}

// LeaseID is the leader-election Lease name of this instance's replicas, from the
// unsharded one: each shard elects its own leader, so the instances of different shards
// never wait on one another. The default shard keeps the unsharded name: it manages what
// an unsharded instance managed (at least the clusters without the key), so a rolling
// update from an unsharded instance to the default shard's (or one renaming the default
// value) hands the leadership over through one Lease, where a Lease of its own would let
// the new pod lead while the old one still leads, both acting on the same clusters.
// Hence two instances of a fleet must never both be the default: they would share it.
func (s Shard) LeaseID(base string) string {
	if !s.Enabled() || s.Default {
		return base
	}
	return "shard-" + s.Value + "." + base
}

// String is for logs.
func (s Shard) String() string {
	if !s.Enabled() {
		return "all"
	}
	d := ""
	if s.Default {
		d = " (and clusters without it)"
	}
	return s.Key + "=" + s.Value + d
}

// manages reports whether this instance manages cluster object o: its scope annotation
// (Scope) and its shard (Shard) both say so.
func (r *Reconciler) manages(o client.Object) bool {
	return r.Scope.Manages(o.GetAnnotations()) && r.Shard.Manages(o.GetLabels(), o.GetAnnotations())
}

// managedPredicate passes the events of clusters this instance manages, and an update of
// a cluster it managed before the update: a cluster moved to another shard or scope must
// reach Reconcile once more, which releases it (stops its etcd clients, drops its
// metrics and memory) at once rather than at its next requeue.
func (r *Reconciler) managedPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return r.manages(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return r.manages(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return r.manages(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return r.manages(e.ObjectNew) || (e.ObjectOld != nil && r.manages(e.ObjectOld))
		},
	}
}

// release drops all this instance kept of a cluster it does not (or no longer) manage:
// its etcd clients, metrics and memory. Nothing is written or deleted: the pods and
// members are the instance's that manages the cluster now.
func (r *Reconciler) release(key types.NamespacedName) {
	forgetClusterMetrics(key.Namespace, key.Name)
	r.forget(key.String()) // memory.go
	r.cmSettle.forget(key.String())
}

// movedAway reports whether the cluster, as the API server holds it now, is no longer
// this instance's. It is asked twice a reconcile: right after the cluster was read (from
// the cache, which may lag the move) and before anything is written, and again right
// before the step, since observing takes a while (etcd is dialled). One GET around the
// cache each time: the cache of the instance being left may show the move later than
// the instance joined sees it, and each moment of that lag would be one more in which
// both act. What remains is a move arriving once the step has begun (or between the
// first check and the writes before observing): that one runs to its end.
// A cluster the API server cannot show (deleted meanwhile, or the read failed) is left
// to the reconcile's own reads and the step's checks.
func (r *Reconciler) movedAway(ctx context.Context, key types.NamespacedName) bool {
	if !r.Shard.Enabled() && (r.Scope == ScopeAll || r.Scope == "") {
		return false
	}
	var now etcdv1beta2.EtcdCluster
	if err := r.apiReader().Get(ctx, key, &now); err != nil {
		return false
	}
	return !r.manages(&now)
}
