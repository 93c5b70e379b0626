package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// statusWriter is a reconcile's one writer of the cluster's status. Every write is a
// merge patch of what the reconcile changed since base (the object as the reconcile read
// it, or as last checkpointed), not an update: the cached object may lag the previous
// reconcile's write, and an update would fail on its stale resourceVersion (the operator
// is the only writer of status).
type statusWriter struct {
	r    *Reconciler
	c    *etcdv1beta2.EtcdCluster // the object the reconcile changes
	base *etcdv1beta2.EtcdCluster // what the API server holds, as far as this reconcile knows
	// scope is the reconcile's observation once it observed (nil before): what it found
	// and planned is reported at the flush.
	scope *observation
	// resolvedTLS is spec.TLS.static as built-in issuing resolved it (act_builtintls.go),
	// kept in c across writes: a patch reads back the stored object, which has none.
	resolvedTLS *etcdv1beta2.StaticTLS
	// discarded: the cluster left this instance during the reconcile (shard.go), so
	// the flush writes nothing.
	discarded bool
}

// discard makes the flush write nothing: the status is another instance's to write.
func (w *statusWriter) discard() { w.discarded = true }

func (r *Reconciler) statusWriterFor(c *etcdv1beta2.EtcdCluster) *statusWriter {
	return &statusWriter{r: r, c: c, base: c.DeepCopy()}
}

// checkpoint writes status now, before a step whose effect must survive a restart (the
// initial cluster, a pending learner, a recovery record); later writes diff against it.
func (w *statusWriter) checkpoint(ctx context.Context) error {
	if err := w.patch(ctx); err != nil {
		return fmt.Errorf("record status before acting: %w", err)
	}
	return nil
}

// flush is the reconcile's last write, deferred so that every path ends with one. A
// reconcile that planned a step reports it here (updateStatus), whether the step ran or
// backs off. err is what the reconcile is about to return: a failure no step reported
// becomes the Reconciled condition (False, with a warning event) before the write, so the
// user sees it in status and not only in the operator's log. It returns the error to
// return.
func (w *statusWriter) flush(ctx context.Context, err error) error {
	if w.discarded {
		return err
	}
	if o := w.scope; o != nil && o.planned != nil {
		w.r.updateStatus(w.c, o)
	}
	if err != nil {
		w.r.reportReconciled(w.c, reconcileFailureReason(err), err, true, w.r.Now().UTC().Format(timeFormat))
	}
	recordReconciled(w.c)
	if perr := w.patch(ctx); perr != nil {
		return errors.Join(err, fmt.Errorf("patch status: %w", perr))
	}
	return err
}

// patch sends what changed since base, and nothing when nothing did: a cluster at rest
// is reconciled every steadyResync, and an empty patch would still be a request on the
// API server per cluster per resync (BenchmarkScale counts them).
func (w *statusWriter) patch(ctx context.Context) error {
	w.c.Status.ObservedGeneration = w.c.Generation
	p := client.MergeFrom(w.base)
	data, err := p.Data(w.c)
	if err != nil {
		return err
	}
	if string(data) == "{}" {
		return nil
	}
	if err := w.r.Status().Patch(ctx, w.c, client.RawPatch(p.Type(), data)); err != nil {
		return err
	}
	if w.resolvedTLS != nil && w.c.Spec.TLS != nil && (w.c.Spec.TLS.Auto != nil || w.c.Spec.TLS.CertManager != nil) {
		w.c.Spec.TLS.Static = w.resolvedTLS.DeepCopy()
	}
	w.r.wrote(w.c) // the next reconcile reads at least this version (memory_ownwrites.go)
	w.base = w.c.DeepCopy()
	return nil
}
