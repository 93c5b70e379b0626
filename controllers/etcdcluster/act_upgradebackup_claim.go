package etcdcluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The claim fallback of the backup before a minor step (internal/planner/upgradebackup.go):
// no EtcdBackup names the cluster, so the operator makes its own target. It creates a
// PersistentVolumeClaim named as the step's one-shot EtcdBackup (ReadWriteOnce, the
// default StorageClass, sized by the planner from the largest member database) and
// then that EtcdBackup with PVC storage on it, so the snapshot is taken by the EtcdBackup
// controller's ordinary PVC backup pod, checksum file and status included. Both carry
// the upgrade-backup labels and are controlled by the cluster: deleted with it, and
// never mistaken for member claims (no etcd_cluster label; app=etcd-operator puts the
// claim in the operator's cache).
//
// Only the newest such snapshot is kept: once status.upgradeBackup records one (Claim
// set), every other claim and EtcdBackup the cluster controls under the upgrade-backup
// label is deleted (pruneClaimBackups), except the one the current spec's step uses.
// So at rest a cluster holds at most one claim of this kind, two while a later step's
// backup runs. A step that goes to a configured target, or takes no backup, deletes
// nothing: the claim stays the newest snapshot there is.

// claimBackupPath is the snapshot's path below the claim: the cluster's name with the
// step's suffix, which isUpgradeBackupOf requires.
func claimBackupPath(c *etcdv1beta2.EtcdCluster, version string) string {
	return c.Name + upgradeBackupSuffix(c, version)
}

// ownClaimBackup reports whether eb is a claim-fallback backup of cluster c: controlled
// by it, on the claim of its own name.
func ownClaimBackup(eb *etcdv1beta2.EtcdBackup, c *etcdv1beta2.EtcdCluster) bool {
	return metav1.IsControlledBy(eb, c) && eb.Spec.StorageType == etcdv1beta2.BackupStorageTypePVC &&
		eb.Spec.PVC != nil && eb.Spec.PVC.ClaimName == eb.Name
}

// minorStepAhead reports whether the spec's version is another minor than some member
// or member pod runs, or than status recorded: only then is the claim fallback looked
// at (a cluster at its version reads no StorageClasses).
func minorStepAhead(c *etcdv1beta2.EtcdCluster, o planner.Observed) bool {
	want, err := planner.ParseVersion(render.ClusterVersion(c.Spec))
	if err != nil {
		return false
	}
	differs := func(s string) bool {
		v, err := planner.ParseVersion(s)
		return err == nil && (v.Major != want.Major || v.Minor != want.Minor)
	}
	if differs(c.Status.CurrentVersion) {
		return true
	}
	for _, m := range o.Members {
		if differs(m.Version) {
			return true
		}
	}
	for _, p := range o.Pods {
		if differs(p.Version) {
			return true
		}
	}
	return false
}

// observeBackupClaim is the planner's view of the claim fallback for the step's backup
// name; nil when no minor step is ahead or the cluster opted out.
func (r *Reconciler) observeBackupClaim(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, o planner.Observed) (*planner.BackupClaim, error) {
	if mode, _ := upgradeBackupMode(c); mode == planner.UpgradeBackupSkip || !minorStepAhead(c, o) {
		return nil, nil
	}
	var pvc corev1.PersistentVolumeClaim
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &pvc)
	switch {
	case err == nil && metav1.IsControlledBy(&pvc, c) && pvc.DeletionTimestamp.IsZero():
		return &planner.BackupClaim{Exists: true}, nil
	case err == nil:
		return &planner.BackupClaim{Foreign: true}, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get claim %s: %w", name, err)
	}
	def, err := r.hasDefaultStorageClass(ctx)
	if err != nil {
		return nil, err
	}
	return &planner.BackupClaim{NoDefaultClass: !def}, nil
}

// hasDefaultStorageClass reports whether some StorageClass is marked the default (the
// annotation the API server's DefaultStorageClass admission reads, or its beta form):
// a claim without a class gets that one; without it, it would never bind.
func (r *Reconciler) hasDefaultStorageClass(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, storageClassReadBudget)
	defer cancel()
	var list storagev1.StorageClassList
	if err := r.List(ctx, &list); err != nil {
		return false, fmt.Errorf("list StorageClasses: %w", err)
	}
	return slices.ContainsFunc(list.Items, func(sc storagev1.StorageClass) bool {
		return sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" ||
			sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true"
	}), nil
}

// upgradeBackupLabels mark the one-shot backup of a step, and its claim, as the
// operator's for cluster c.
func upgradeBackupLabels(c *etcdv1beta2.EtcdCluster) map[string]string {
	return map[string]string{
		etcdv1beta2.UpgradeBackupOfLabel:  c.Name,
		etcdv1beta2.UpgradeBackupUIDLabel: string(c.UID),
	}
}

// takeClaimBackup executes TakeUpgradeBackup with ClaimBytes: the claim first (kept if
// the cluster already controls it, refused if another does), then the one-shot
// EtcdBackup into it.
func (r *Reconciler) takeClaimBackup(ctx context.Context, c *etcdv1beta2.EtcdCluster, a planner.Action) error {
	pvc := backupClaimFor(c, a.Name, a.ClaimBytes)
	if err := controllerutil.SetControllerReference(c, pvc, r.Scheme); err != nil {
		return err
	}
	switch err := r.Create(ctx, pvc); {
	case apierrors.IsAlreadyExists(err):
		var got corev1.PersistentVolumeClaim
		if err := r.freshReader().Get(ctx, client.ObjectKeyFromObject(pvc), &got); err != nil {
			return fmt.Errorf("read claim %s: %w", pvc.Name, err)
		}
		if !metav1.IsControlledBy(&got, c) {
			return fmt.Errorf("claim %s/%s exists and is not controlled by EtcdCluster %s; not backing up into it", c.Namespace, pvc.Name, c.Name)
		}
	case err != nil:
		return fmt.Errorf("create claim %s: %w", pvc.Name, err)
	default:
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonUpgradeBackupPending,
			"no EtcdBackup names this cluster: created claim %s (%s, default StorageClass) for the backup before the upgrade to %s",
			pvc.Name, pvc.Spec.Resources.Requests.Storage(), a.Version)
	}
	eb := claimBackupFor(c, a.Name, a.Version)
	if err := controllerutil.SetControllerReference(c, eb, r.Scheme); err != nil {
		return err
	}
	if err := r.Create(ctx, eb); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("create EtcdBackup %s: %w", eb.Name, err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonUpgradeBackupPending,
		"backing up to EtcdBackup %s (claim %s, %s) before the upgrade to %s", eb.Name, pvc.Name, eb.Spec.PVC.Path, a.Version)
	return nil
}

// backupClaimFor is the claim of the step's backup: ReadWriteOnce (one backup pod at a
// time uses it), no StorageClass named (the default's), bytes requested.
func backupClaimFor(c *etcdv1beta2.EtcdCluster, name string, bytes int64) *corev1.PersistentVolumeClaim {
	l := upgradeBackupLabels(c)
	l[render.LabelApp] = render.AppOperatorPod
	l["app.kubernetes.io/managed-by"] = "etcd-operator"
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: l},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(bytes, resource.BinarySI)}},
		},
	}
}

// claimBackupFor is the one-shot EtcdBackup of the step into the claim of its own name.
func claimBackupFor(c *etcdv1beta2.EtcdCluster, name, version string) *etcdv1beta2.EtcdBackup {
	return &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: upgradeBackupLabels(c)},
		Spec: etcdv1beta2.EtcdBackupSpec{
			ClusterRef:  &etcdv1beta2.EtcdClusterRef{Name: c.Name},
			StorageType: etcdv1beta2.BackupStorageTypePVC,
			BackupSource: etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{
				ClaimName: name, Path: claimBackupPath(c, version)}},
		},
	}
}

// staleClaimBackups are the names among owned (claims or EtcdBackups of the claim
// fallback the cluster controls) to delete: all but the recorded newest snapshot and the
// current step's own. Nothing while no claim snapshot is recorded: the newest is never
// deleted before a newer one is taken.
func staleClaimBackups(recorded, current string, owned []string) []string {
	if recorded == "" {
		return nil
	}
	var out []string
	for _, n := range owned {
		if n != recorded && n != current {
			out = append(out, n)
		}
	}
	return out
}

// pruneClaimBackups deletes the claim fallback's older snapshots (staleClaimBackups): the
// EtcdBackup first (its backup pod goes with it), then the claim, each only if a fresh
// read shows the cluster controls it (deleteOwned). Failures are logged and retried on
// the next reconcile; they never hold the membership step.
func (r *Reconciler) pruneClaimBackups(ctx context.Context, c *etcdv1beta2.EtcdCluster) {
	rec := c.Status.UpgradeBackup
	if rec == nil || rec.Claim == "" || rec.Backup == "" {
		return
	}
	sel := client.MatchingLabels{etcdv1beta2.UpgradeBackupOfLabel: c.Name}
	current := upgradeBackupName(c, render.ClusterVersion(c.Spec))
	lg := log.FromContext(ctx)
	var backups etcdv1beta2.EtcdBackupList
	if err := r.List(ctx, &backups, client.InNamespace(c.Namespace), sel); err != nil {
		lg.Error(err, "prune upgrade backups: list EtcdBackups")
		return
	}
	var owned []string
	for i := range backups.Items {
		if eb := &backups.Items[i]; ownClaimBackup(eb, c) && eb.DeletionTimestamp.IsZero() {
			owned = append(owned, eb.Name)
		}
	}
	for _, name := range staleClaimBackups(rec.Backup, current, owned) {
		if err := r.deleteOwned(ctx, c, &etcdv1beta2.EtcdBackup{}, name, ""); err != nil {
			lg.Error(err, "prune upgrade backups: delete EtcdBackup", "backup", name)
			return // its claim stays while the backup that writes to it may still run
		}
	}
	var claims corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &claims, client.InNamespace(c.Namespace), sel); err != nil {
		lg.Error(err, "prune upgrade backups: list claims")
		return
	}
	owned = owned[:0]
	for i := range claims.Items {
		// Never a member's claim, whatever labels were added to it: those are app=etcd
		// and carry the cluster's label.
		pvc := &claims.Items[i]
		_, member := pvc.Labels[render.LabelCluster]
		if metav1.IsControlledBy(pvc, c) && pvc.DeletionTimestamp.IsZero() && pvc.Labels[render.LabelApp] == render.AppOperatorPod && !member {
			owned = append(owned, pvc.Name)
		}
	}
	for _, name := range staleClaimBackups(rec.Backup, current, owned) {
		if err := r.deleteOwned(ctx, c, &corev1.PersistentVolumeClaim{}, name, ""); err != nil {
			lg.Error(err, "prune upgrade backups: delete claim", "claim", name)
			continue
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonUpgradeBackupPruned,
			"deleted claim %s and its EtcdBackup: the backup before the upgrade to %s (%s) is the one kept", name, rec.Version, rec.Backup)
	}
}
