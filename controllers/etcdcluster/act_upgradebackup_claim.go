package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// Only the newest such snapshot is kept (keptClaimBackups): the one status.upgradeBackup
// records (Claim set) or, while it records none on a claim, the newest taken, besides
// the current spec's step's own; every other claim and EtcdBackup the cluster controls
// under the upgrade-backup label is deleted (pruneClaimBackups). A spec changed again
// and again while a step's backup runs thus never piles up claims.

// claimBackupPath is the snapshot's path below the claim: the cluster's name with the
// step's suffix, which isUpgradeBackupOf requires.
func claimBackupPath(c *etcdv1beta2.EtcdCluster, version string) string {
	return c.Name + upgradeBackupSuffix(c, version)
}

// ownClaimBackup reports whether eb is a claim-fallback backup of cluster c: the very
// EtcdBackup the operator created (status.upgradeBackup.created records its UID; names
// are predictable and owner references forgeable), controlled by c, on the claim of its
// own name.
func ownClaimBackup(eb *etcdv1beta2.EtcdBackup, c *etcdv1beta2.EtcdCluster) bool {
	rec := createdRecord(c, eb.Name)
	return rec != nil && rec.BackupUID != "" && string(eb.UID) == rec.BackupUID &&
		metav1.IsControlledBy(eb, c) && eb.Spec.StorageType == etcdv1beta2.BackupStorageTypePVC &&
		eb.Spec.PVC != nil && eb.Spec.PVC.ClaimName == eb.Name
}

// createdRecord is status.upgradeBackup.created's entry for name, nil when the operator
// records creating nothing of that name.
func createdRecord(c *etcdv1beta2.EtcdCluster, name string) *etcdv1beta2.UpgradeBackupCreated {
	if ub := c.Status.UpgradeBackup; ub != nil {
		for i := range ub.Created {
			if ub.Created[i].Name == name {
				return &ub.Created[i]
			}
		}
	}
	return nil
}

// recordCreated keeps in status what the operator created for the claim fallback (set
// changes the entry of its name, made if missing); written with the rest of status.
func recordCreated(c *etcdv1beta2.EtcdCluster, name string, set func(*etcdv1beta2.UpgradeBackupCreated)) error {
	if rec := createdRecord(c, name); rec != nil {
		set(rec)
		return nil
	}
	if c.Status.UpgradeBackup == nil {
		c.Status.UpgradeBackup = &etcdv1beta2.UpgradeBackupStatus{}
	}
	ub := c.Status.UpgradeBackup
	if len(ub.Created) >= etcdv1beta2.MaxUpgradeBackupsCreated {
		return fmt.Errorf("status.upgradeBackup.created already lists %d backups the operator made and has not deleted yet (see its events); not making another", len(ub.Created))
	}
	ub.Created = append(ub.Created, etcdv1beta2.UpgradeBackupCreated{Name: name})
	set(&ub.Created[len(ub.Created)-1])
	return nil
}

// forgetCreated drops name from status.upgradeBackup.created: its objects are deleted.
func forgetCreated(c *etcdv1beta2.EtcdCluster, name string) {
	if ub := c.Status.UpgradeBackup; ub != nil {
		ub.Created = slices.DeleteFunc(ub.Created, func(r etcdv1beta2.UpgradeBackupCreated) bool { return r.Name == name })
		if len(ub.Created) == 0 {
			ub.Created = nil
		}
	}
}

// isOneShotName reports whether name has the shape upgradeBackupName gives cluster c's
// one-shot backups: <cluster, maybe shortened>-before-<version>-<8 hex digits>.
func isOneShotName(c *etcdv1beta2.EtcdCluster, name string) bool {
	i := strings.LastIndex(name, "-before-")
	if i <= 0 || !strings.HasPrefix(strings.ToLower(c.Name), name[:i]) {
		return false
	}
	rest := name[i+len("-before-"):]
	j := strings.LastIndex(rest, "-")
	if j <= 0 || len(rest)-j-1 != 8 {
		return false
	}
	for _, r := range rest[j+1:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
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
// name; nil when no minor step is ahead or the cluster opted out. The claim is read from
// the API server: the cache holds only claims labelled as the operator's, so a claim of
// that name without the label (a tenant's, or the operator's with its labels stripped)
// would look absent there.
func (r *Reconciler) observeBackupClaim(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, o planner.Observed) (*planner.BackupClaim, error) {
	if mode, _ := upgradeBackupMode(c); mode == planner.UpgradeBackupSkip || !minorStepAhead(c, o) {
		return nil, nil
	}
	var pvc corev1.PersistentVolumeClaim
	err := r.freshReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &pvc)
	switch {
	case err == nil && !ownBackupClaim(&pvc, c):
		return &planner.BackupClaim{Foreign: true}, nil
	case err == nil && !pvc.DeletionTimestamp.IsZero():
		return &planner.BackupClaim{Deleting: true}, nil
	case err == nil:
		bc := &planner.BackupClaim{Exists: true}
		if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			bc.Bytes = q.Value()
		}
		if pvc.Spec.StorageClassName != nil { // the default class, as admission named it
			classes, err := r.storageClasses(ctx) // act_storage.go
			if err != nil {
				return nil, err
			}
			bc.Expandable = classes[*pvc.Spec.StorageClassName]
		}
		return bc, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get claim %s: %w", name, err)
	}
	def, err := r.hasDefaultStorageClass(ctx)
	if err != nil {
		return nil, err
	}
	return &planner.BackupClaim{NoDefaultClass: !def}, nil
}

// ownBackupClaim reports whether pvc is the claim the operator created for the claim
// fallback of cluster c: the UID its create returned (recorded in status), controlled by
// c, still labelled as the operator made it.
func ownBackupClaim(pvc *corev1.PersistentVolumeClaim, c *etcdv1beta2.EtcdCluster) bool {
	rec := createdRecord(c, pvc.Name)
	if rec == nil || rec.ClaimUID == "" || string(pvc.UID) != rec.ClaimUID || !metav1.IsControlledBy(pvc, c) {
		return false
	}
	for k, v := range upgradeBackupLabels(c) {
		if pvc.Labels[k] != v {
			return false
		}
	}
	return true
}

// claimGone reports whether the cluster's own claim name, into which a backup of the
// claim fallback writes, is missing, being deleted, or no longer the one the operator
// created: that backup can never finish. Read from the API server (see
// observeBackupClaim): the cache could miss a claim whose labels were stripped, or lag
// the EtcdBackup read from it, and report a claim gone that is not.
func (r *Reconciler) claimGone(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string) (bool, error) {
	var pvc corev1.PersistentVolumeClaim
	switch err := r.freshReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &pvc); {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("get claim %s: %w", name, err)
	}
	rec := createdRecord(c, name)
	return !pvc.DeletionTimestamp.IsZero() || rec == nil || string(pvc.UID) != rec.ClaimUID, nil
}

// hasDefaultStorageClass reports whether some StorageClass is marked the default (the
// annotation the API server's DefaultStorageClass admission reads, or its beta form):
// a claim without a class gets that one; without it, it would never bind.
func (r *Reconciler) hasDefaultStorageClass(ctx context.Context) (bool, error) {
	list, err := r.listStorageClasses(ctx)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list, func(sc storagev1.StorageClass) bool {
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

// takeClaimBackup executes TakeUpgradeBackup with ClaimBytes: the claim first, then the
// one-shot EtcdBackup into it, each create's UID recorded in status.upgradeBackup.created
// (and checkpointed at once when the reconcile can: observeUpgradeBackup takes only an
// EtcdBackup of that UID as the operator's). A claim of that name is used only if it is
// the one the operator created (ownBackupClaim) and not being deleted; one made for a
// smaller database is grown first (the planner refuses the step when its StorageClass
// cannot expand it).
func (r *Reconciler) takeClaimBackup(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	checkpoint := func() error {
		if o != nil && o.status != nil {
			return o.status.checkpoint(ctx)
		}
		return nil
	}
	pvc := backupClaimFor(c, a.Name, a.ClaimBytes)
	if err := controllerutil.SetControllerReference(c, pvc, r.Scheme); err != nil {
		return err
	}
	if err := recordCreated(c, a.Name, func(*etcdv1beta2.UpgradeBackupCreated) {}); err != nil {
		return err // bounded: never a claim whose UID could not be recorded
	}
	switch err := r.Create(ctx, pvc); {
	case apierrors.IsAlreadyExists(err):
		var got corev1.PersistentVolumeClaim
		if err := r.freshReader().Get(ctx, client.ObjectKeyFromObject(pvc), &got); err != nil {
			return fmt.Errorf("read claim %s: %w", pvc.Name, err)
		}
		if err := r.reuseBackupClaim(ctx, c, &got, a.ClaimBytes); err != nil {
			return err
		}
		pvc = &got
	case err != nil:
		return fmt.Errorf("create claim %s: %w", pvc.Name, err)
	default:
		_ = recordCreated(c, a.Name, func(rec *etcdv1beta2.UpgradeBackupCreated) { rec.ClaimUID = string(pvc.UID) })
		if err := checkpoint(); err != nil {
			return err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonUpgradeBackupPending,
			"no EtcdBackup names this cluster: created claim %s (%s, default StorageClass) for the backup before the upgrade to %s",
			pvc.Name, pvc.Spec.Resources.Requests.Storage(), a.Version)
	}
	eb := claimBackupFor(c, a.Name, a.Version, a.ClaimBytes)
	if err := controllerutil.SetControllerReference(c, eb, r.Scheme); err != nil {
		return err
	}
	if err := r.Create(ctx, eb); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Not recorded: the next observation takes it as the operator's only if an
			// earlier create of this operator's recorded its UID.
			return nil
		}
		return fmt.Errorf("create EtcdBackup %s: %w", eb.Name, err)
	}
	_ = recordCreated(c, a.Name, func(rec *etcdv1beta2.UpgradeBackupCreated) { rec.BackupUID = string(eb.UID) })
	if err := checkpoint(); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonUpgradeBackupPending,
		"backing up to EtcdBackup %s (claim %s, %s) before the upgrade to %s", eb.Name, pvc.Name, eb.Spec.PVC.Path, a.Version)
	return nil
}

// reuseBackupClaim checks an existing claim of the step's name before it is backed up
// into: the operator's own (its recorded UID, controlled, labelled), not being deleted,
// and requesting at least bytes, which it is grown to when it requests less.
func (r *Reconciler) reuseBackupClaim(ctx context.Context, c *etcdv1beta2.EtcdCluster, pvc *corev1.PersistentVolumeClaim, bytes int64) error {
	switch {
	case !ownBackupClaim(pvc, c):
		return fmt.Errorf("claim %s/%s exists and is not the one the operator created for EtcdCluster %s (its UID is not recorded in status.upgradeBackup.created, or it is not controlled by the cluster, or its labels changed); not backing up into it", c.Namespace, pvc.Name, c.Name)
	case !pvc.DeletionTimestamp.IsZero():
		return fmt.Errorf("claim %s/%s is being deleted; it is made again once gone", c.Namespace, pvc.Name)
	}
	q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if q.Value() >= bytes {
		return nil
	}
	want := resource.NewQuantity(bytes, resource.BinarySI)
	if err := r.expandClaim(ctx, pvc, want.String()); err != nil { // act_storage.go
		return fmt.Errorf("grow claim %s from %s to %s for the backup: %w (delete the claim and the EtcdBackup of its name, if any, to have a claim of that size made)", pvc.Name, q.String(), want, err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonUpgradeBackupPending,
		"grew claim %s from %s to %s: the database outgrew it", pvc.Name, q.String(), want)
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

// claimBackupFor is the one-shot EtcdBackup of the step into the claim of its own name,
// with a timeout for a claim of claimBytes (claimBackupTimeout).
func claimBackupFor(c *etcdv1beta2.EtcdCluster, name, version string, claimBytes int64) *etcdv1beta2.EtcdBackup {
	return &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: upgradeBackupLabels(c)},
		Spec: etcdv1beta2.EtcdBackupSpec{
			ClusterRef:   &etcdv1beta2.EtcdClusterRef{Name: c.Name},
			StorageType:  etcdv1beta2.BackupStorageTypePVC,
			BackupPolicy: &etcdv1beta2.BackupPolicy{TimeoutInSecond: claimBackupTimeout(claimBytes)},
			BackupSource: etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{
				ClaimName: name, Path: claimBackupPath(c, version)}},
		},
	}
}

// claimBackupTimeout bounds the one-shot backup into a claim of claimBytes: the backup's
// default (60 s) would cut off a large database's snapshot. A minute for the pod and the
// connection, plus the claim's size (at least the database's: claimBytes) at a
// conservative 20 MiB/s for streaming the snapshot and writing it and its checksum,
// at most an hour (the largest claim the operator makes, 32 GiB, needs about 28 min).
func claimBackupTimeout(claimBytes int64) int64 {
	const base, rate, most = 60, 20 << 20, 3600
	return min(base+(max(claimBytes, 0)+rate-1)/rate, most)
}

// claimBackup is one claim-fallback EtcdBackup the cluster controls: its name (its
// claim's too) and when it last took its snapshot (zero: it has none).
type claimBackup struct {
	name  string
	taken time.Time
}

// keptClaimBackups are the claim-fallback snapshots to keep: the current spec's step's
// own (taking, or taken), the one status.upgradeBackup records (recorded, "" when it
// records none on a claim), and while none is recorded the newest one taken, so the last
// snapshot stays until a newer one is recorded. Every other claim and EtcdBackup of the
// fallback is deleted: a cluster holds at most two at rest, three while a step's backup
// runs, however often its spec changes.
func keptClaimBackups(recorded, current string, backups []claimBackup) map[string]bool {
	keep := map[string]bool{current: true}
	if recorded != "" {
		keep[recorded] = true
		return keep
	}
	var newest *claimBackup
	for i := range backups {
		if b := &backups[i]; !b.taken.IsZero() && (newest == nil || b.taken.After(newest.taken)) {
			newest = b
		}
	}
	if newest != nil {
		keep[newest.name] = true
	}
	return keep
}

// pruneClaimBackups deletes the claim fallback's snapshots not kept (keptClaimBackups).
// Only what status.upgradeBackup.created records is a candidate, never what a label
// selects (labels are anyone's to write): a name of the one-shot shape, the EtcdBackup
// and the claim each deleted only with the UID its create returned as a precondition,
// and only while a fresh read shows the cluster controls it (deleteOwned). The EtcdBackup
// goes first (its backup pod goes with it); a claim stays while its EtcdBackup could not
// be deleted, or while an EtcdBackup or EtcdRestore the cluster does not own names it
// (someone reads or writes it). Once both are gone the record is dropped. One failure
// does not stop the others; failures are logged and retried on the next reconcile, and
// never hold the membership step.
func (r *Reconciler) pruneClaimBackups(ctx context.Context, c *etcdv1beta2.EtcdCluster) {
	ub := c.Status.UpgradeBackup
	if ub == nil || len(ub.Created) == 0 {
		return
	}
	lg := log.FromContext(ctx)
	recorded := ""
	if ub.Claim != "" {
		recorded = ub.Backup
	}
	var own []claimBackup
	for _, rec := range ub.Created {
		b := claimBackup{name: rec.Name}
		var eb etcdv1beta2.EtcdBackup
		err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: rec.Name}, &eb)
		if err != nil && !apierrors.IsNotFound(err) {
			lg.Error(err, "prune upgrade backups: read EtcdBackup", "backup", rec.Name)
			return // the newest taken is not known: keep everything this time
		}
		if err == nil && ownClaimBackup(&eb, c) && eb.Status.Succeeded {
			b.taken = eb.Status.LastSuccessDate.Time
		}
		own = append(own, b)
	}
	keep := keptClaimBackups(recorded, upgradeBackupName(c, render.ClusterVersion(c.Spec)), own)
	var candidates []etcdv1beta2.UpgradeBackupCreated
	for _, rec := range ub.Created {
		if !keep[rec.Name] && isOneShotName(c, rec.Name) {
			candidates = append(candidates, rec)
		}
	}
	if len(candidates) == 0 {
		return
	}
	inUse, err := r.claimsNamedByOthers(ctx, c)
	if err != nil {
		lg.Error(err, "prune upgrade backups: list who reads the claims")
		return
	}
	var errs []error
	for _, rec := range candidates {
		gone, err := r.deleteCreated(ctx, c, &etcdv1beta2.EtcdBackup{}, rec.Name, rec.BackupUID)
		if err != nil {
			errs = append(errs, err)
			continue // its claim stays while the backup that writes to it may still run
		}
		if !gone || inUse[rec.Name] {
			continue
		}
		claimGone, err := r.deleteCreated(ctx, c, &corev1.PersistentVolumeClaim{}, rec.Name, rec.ClaimUID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if claimGone {
			forgetCreated(c, rec.Name)
			r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonUpgradeBackupPruned,
				"deleted claim %s and its EtcdBackup: an older backup before a minor step than the one kept", rec.Name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		lg.Error(err, "prune upgrade backups")
	}
}

// deleteCreated deletes the object of obj's kind named name that the operator created
// with uid; gone is true once that object no longer exists as the operator's: deleted
// now, already missing, replaced by another object of the name (left alone), or never
// created (uid "").
func (r *Reconciler) deleteCreated(ctx context.Context, c *etcdv1beta2.EtcdCluster, obj client.Object, name, uid string) (gone bool, err error) {
	if uid == "" {
		return true, nil
	}
	switch err := r.freshReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, obj); {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read %s before deleting it: %w", name, err)
	case string(obj.GetUID()) != uid:
		return true, nil
	}
	if err := r.deleteOwned(ctx, c, obj, name, types.UID(uid)); err != nil { // act_delete.go
		return false, err
	}
	return true, nil
}

// claimsNamedByOthers are the claims that an EtcdBackup or EtcdRestore in the cluster's
// namespace not controlled by the cluster names: a claim of the fallback that someone
// backs up into or restores from is not deleted under them.
func (r *Reconciler) claimsNamedByOthers(ctx context.Context, c *etcdv1beta2.EtcdCluster) (map[string]bool, error) {
	var backups etcdv1beta2.EtcdBackupList
	var restores etcdv1beta2.EtcdRestoreList
	for _, l := range []struct {
		kind string
		list client.ObjectList
	}{{"EtcdBackups", &backups}, {"EtcdRestores", &restores}} {
		if err := r.List(ctx, l.list, client.InNamespace(c.Namespace)); err != nil {
			return nil, fmt.Errorf("list %s: %w", l.kind, err)
		}
	}
	named := map[string]bool{}
	for i := range backups.Items {
		if eb := &backups.Items[i]; eb.Spec.PVC != nil && !metav1.IsControlledBy(eb, c) {
			named[eb.Spec.PVC.ClaimName] = true
		}
	}
	for i := range restores.Items {
		if er := &restores.Items[i]; er.Spec.PVC != nil && !metav1.IsControlledBy(er, c) {
			named[er.Spec.PVC.ClaimName] = true
		}
	}
	return named, nil
}
