package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restoreorigin"
)

// errRestoreRejected marks a restore annotation that is not provably the operator's.
var errRestoreRejected = errors.New("restore annotation not written by this operator")

// restoreStep is the restore step for members about to be created: nil unless one of
// them bootstraps from a backup. The cluster's restore annotation is only a claim (anyone
// who may edit the EtcdCluster can write it), so it is honoured only if it is the
// operator's own: the EtcdRestore it names exists in the cluster's namespace with the
// recorded UID, names this cluster, and its spec resolves to that very backup. The init
// container always runs the operator's configured image. Otherwise nothing may be
// created: bootstrapping an empty cluster where a restore was asked for would look like
// data loss, and mounting a Secret or claim named only by an annotation would let an
// annotation reach what its writer may not.
func (r *Reconciler) restoreStep(ctx context.Context, c *etcdv1beta2.EtcdCluster, members []render.Member) (*render.RestoreStep, error) {
	if step, ok, err := r.backupRestoreStep(ctx, c, members); ok { // act_backuprestore_source.go
		return step, err
	}
	if _, ok := c.Annotations[render.AnnotationRestore]; !ok || !bootstrapsFromBackup(members) {
		return nil, nil
	}
	var er *etcdv1beta2.EtcdRestore
	src, err := render.Restore(c)
	if err == nil {
		er, err = r.checkRestoreOrigin(ctx, c, src)
	}
	if err != nil {
		msg := fmt.Sprintf("%s; no member was created. Remove the annotation %s to start an empty cluster, or restore with an EtcdRestore: %v",
			errRestoreRejected, render.AnnotationRestore, err)
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoreSourceRejected, msg)
		return nil, fmt.Errorf("%w: %w", errRestoreRejected, err)
	}
	step := &render.RestoreStep{Source: *src, Image: r.OperatorImage}
	step.ChecksPassedForPin = r.restorePinProven(ctx, c, er, src) // act_restorepin.go
	return step, nil
}

// bootstrapsFromBackup: some member starts a new cluster from the backup (a recovering
// member copies a survivor instead; joining members sync from their peers).
func bootstrapsFromBackup(members []render.Member) bool {
	for _, m := range members {
		if m.InitialClusterState == render.StateNew && m.Recovery == nil {
			return true
		}
	}
	return false
}

// checkRestoreOrigin finds the EtcdRestore the annotation names and checks that it is
// the one that created this cluster from src; it returns the EtcdRestore it read.
func (r *Reconciler) checkRestoreOrigin(ctx context.Context, c *etcdv1beta2.EtcdCluster, src *render.RestoreSource) (*etcdv1beta2.EtcdRestore, error) {
	var er etcdv1beta2.EtcdRestore
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: src.Restore}, &er)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("EtcdRestore %s/%s not found", c.Namespace, src.Restore)
	}
	if err != nil {
		return nil, err
	}
	if restoreorigin.CheckCreated(&er, c) == nil {
		// The restore recorded creating this very cluster (its UID) with this very
		// source: still its own after the EtcdBackup it read has changed.
		return &er, nil
	}
	if name := restoreorigin.BackupRef(&er); name != "" {
		// The restore reads an EtcdBackup's storage: that backup, of the same
		// namespace, is what the annotation must match.
		var eb etcdv1beta2.EtcdBackup
		if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &eb); err != nil {
			return nil, fmt.Errorf("EtcdBackup %s/%s of EtcdRestore %s: %w", c.Namespace, name, er.Name, err)
		}
		return &er, restoreorigin.CheckWithBackup(&er, c.Name, src, &eb)
	}
	return &er, restoreorigin.Check(&er, c.Name, src)
}
