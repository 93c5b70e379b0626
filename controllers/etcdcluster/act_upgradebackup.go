package etcdcluster

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch;create;delete

// The backup before a minor upgrade step (internal/planner/upgradebackup.go). The
// configured target is the EtcdBackup whose spec.clusterRef names the cluster (the first
// by name when several do; S3 or PVC storage only). Before the step the operator creates
// a one-shot EtcdBackup <cluster>-before-<version>-<id> with the target's storage, its
// path suffixed ".before-<version>-<id>" (upgradeBackupID), and the EtcdBackup controller takes it as any other
// backup. It is labelled with the cluster's name and UID but not owned by the cluster: a
// rollback (an EtcdRestore replacing the cluster) deletes the cluster, and the backup it
// restores from must stay. The target's retention (maxBackups, maxAgeInSecond) counts
// only its own periodic objects (<path>_v<revision>_<time>), never this one.
//
// Without a target (no EtcdBackup names the cluster) the operator backs up into a claim
// of its own (act_upgradebackup_claim.go): the same one-shot EtcdBackup, with PVC
// storage, on a claim of the same name that the operator creates; both are owned by the
// cluster.

// upgradeBackupName is the one-shot backup's name for the step of cluster c to version:
// per cluster incarnation (its UID), so a cluster recreated under the same name never
// takes an older one's backup as its own, and per attempt (the spec's generation), so a
// step asked for again later (after a downgrade, or a version reverted and re-applied)
// takes a new backup instead of counting an old one as the snapshot to roll back to. At
// most 63 characters.
func upgradeBackupName(c *etcdv1beta2.EtcdCluster, version string) string {
	suffix := fmt.Sprintf("-before-%s-%s", strings.ReplaceAll(version, "+", "-"), upgradeBackupID(c))
	base := c.Name
	if len(base)+len(suffix) > 63 {
		base = strings.TrimRight(base[:max(1, 63-len(suffix))], "-.")
	}
	return strings.ToLower(base + suffix)
}

// upgradeBackupID tells one cluster incarnation's attempt from every other: a hash of its
// UID and the spec generation that asked for the step. It ends the one-shot backup's name
// and its storage path, so two clusters sharing a target path never write one key.
func upgradeBackupID(c *etcdv1beta2.EtcdCluster) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", c.UID, c.Generation)
	return fmt.Sprintf("%08x", h.Sum32())
}

// upgradeBackupSuffix ends the one-shot backup's storage path (after the target's).
func upgradeBackupSuffix(c *etcdv1beta2.EtcdCluster, version string) string {
	return ".before-" + version + "-" + upgradeBackupID(c)
}

// upgradeBackupTarget is the cluster's configured EtcdBackup target, nil when none.
func (r *Reconciler) upgradeBackupTarget(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*etcdv1beta2.EtcdBackup, error) {
	var list etcdv1beta2.EtcdBackupList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("list EtcdBackups: %w", err)
	}
	var cands []*etcdv1beta2.EtcdBackup
	for i := range list.Items {
		eb := &list.Items[i]
		if eb.Spec.ClusterRef == nil || eb.Spec.ClusterRef.Name != c.Name || !eb.DeletionTimestamp.IsZero() {
			continue
		}
		if _, ours := eb.Labels[etcdv1beta2.UpgradeBackupOfLabel]; ours {
			continue
		}
		switch {
		case eb.Spec.StorageType == etcdv1beta2.BackupStorageTypeS3 && eb.Spec.S3 != nil,
			eb.Spec.StorageType == etcdv1beta2.BackupStorageTypePVC && eb.Spec.PVC != nil:
			cands = append(cands, eb)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Name < cands[j].Name })
	return cands[0], nil
}

// observeUpgradeBackup fills the planner's view of the step's backup: its target and the
// state of the one-shot backup for the spec's version. The one-shot backup, when it
// exists and is this cluster's, is returned for the status record.
func (r *Reconciler) observeUpgradeBackup(ctx context.Context, c *etcdv1beta2.EtcdCluster, seen planner.Observed) (*planner.UpgradeBackup, *etcdv1beta2.EtcdBackup, error) {
	name := upgradeBackupName(c, render.ClusterVersion(c.Spec))
	ub := &planner.UpgradeBackup{Name: name}
	var eb etcdv1beta2.EtcdBackup
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &eb)
	switch {
	case apierrors.IsNotFound(err):
		target, err := r.upgradeBackupTarget(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		if target != nil {
			ub.Target = target.Name
			return ub, nil, nil
		}
		if ub.Claim, err = r.observeBackupClaim(ctx, c, name, seen); err != nil { // act_upgradebackup_claim.go
			return nil, nil, err
		}
		return ub, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("get EtcdBackup %s: %w", name, err)
	}
	ub.Target = name // the one-shot backup decides from now on, whatever the target
	if refused, err := r.notTheOperatorsClaimBackup(ctx, c, &eb); err != nil {
		return nil, nil, err
	} else if refused != "" {
		ub.State, ub.Message = planner.UpgradeBackupFailed, refused
		return ub, nil, nil
	}
	if eb.Labels[etcdv1beta2.UpgradeBackupOfLabel] != c.Name || eb.Labels[etcdv1beta2.UpgradeBackupUIDLabel] != string(c.UID) ||
		!isUpgradeBackupOf(&eb, c, render.ClusterVersion(c.Spec)) {
		ub.State = planner.UpgradeBackupFailed
		ub.Message = fmt.Sprintf("EtcdBackup %s exists but was not created by the operator for this cluster (labels %s and %s); delete or rename it",
			name, etcdv1beta2.UpgradeBackupOfLabel, etcdv1beta2.UpgradeBackupUIDLabel)
		return ub, nil, nil
	}
	cond := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
	switch {
	case cond == nil || cond.ObservedGeneration != eb.Generation:
		ub.State = planner.UpgradeBackupRunning
	case cond.Status == metav1.ConditionTrue && eb.Status.Succeeded:
		ub.State = planner.UpgradeBackupTaken
	case cond.Status == metav1.ConditionTrue:
		ub.State = planner.UpgradeBackupRunning
	default:
		ub.State = planner.UpgradeBackupFailed
		ub.Message = fmt.Sprintf("%s: %s", cond.Reason, cond.Message)
	}
	if ub.State != planner.UpgradeBackupTaken && ownClaimBackup(&eb, c) { // act_upgradebackup_claim.go
		if gone, err := r.claimGone(ctx, c, eb.Spec.PVC.ClaimName); err != nil {
			return nil, nil, err
		} else if gone {
			ub.State = planner.UpgradeBackupFailed
			ub.Message = fmt.Sprintf("the claim %s it writes to is gone or being deleted; delete EtcdBackup %s to start the backup over", eb.Spec.PVC.ClaimName, eb.Name)
		} else if ub.State == planner.UpgradeBackupFailed {
			// Retried into a claim sized anew from the database, not into the same one.
			ub.Message += fmt.Sprintf(" (to start over, delete EtcdBackup %s and its claim %s: both are made again, the claim sized from the database then)", eb.Name, eb.Spec.PVC.ClaimName)
		}
	}
	return ub, &eb, nil
}

// notTheOperatorsClaimBackup says why the EtcdBackup eb, of the step's one-shot name,
// is refused as the claim fallback's backup ("" when it is not refused). Once the
// operator records creating a backup of that name (status.upgradeBackup.created), only
// the EtcdBackup of the recorded UID on the claim of its name counts; with no record and
// no EtcdBackup naming the cluster as a target, the operator made none, so an EtcdBackup
// of that name is someone else's (its name, labels and owner reference are all
// predictable or forgeable). Either is never used and never deleted.
func (r *Reconciler) notTheOperatorsClaimBackup(ctx context.Context, c *etcdv1beta2.EtcdCluster, eb *etcdv1beta2.EtcdBackup) (string, error) {
	if rec := createdRecord(c, eb.Name); rec != nil && rec.BackupUID != "" {
		if ownClaimBackup(eb, c) && isUpgradeBackupOf(eb, c, render.ClusterVersion(c.Spec)) {
			return "", nil
		}
		return fmt.Sprintf("EtcdBackup %s (uid %s) is not the one the operator created for this step (uid %s, on the claim %s); it is not used and not deleted: delete or rename it",
			eb.Name, eb.UID, rec.BackupUID, eb.Name), nil
	}
	target, err := r.upgradeBackupTarget(ctx, c)
	if err != nil || target != nil {
		return "", err // a target's one-shot: judged by its labels and path below
	}
	return fmt.Sprintf("EtcdBackup %s (uid %s) exists but the operator did not create it: no EtcdBackup names this cluster in spec.clusterRef and status.upgradeBackup.created records no backup of that name; it is not used and not deleted: delete or rename it, or create an EtcdBackup naming the cluster",
		eb.Name, eb.UID), nil
}

// isUpgradeBackupOf reports whether eb backs up cluster c to the path the operator gave
// the step to version: labels are anyone's to write, so an EtcdBackup of another cluster
// or another path, given this step's name and labels, is not taken as its backup.
// (Whoever may write EtcdBackup status could still forge its success: TODO sign the
// record with the pin key.)
func isUpgradeBackupOf(eb *etcdv1beta2.EtcdBackup, c *etcdv1beta2.EtcdCluster, version string) bool {
	if eb.Spec.ClusterRef == nil || eb.Spec.ClusterRef.Name != c.Name || len(eb.Spec.EtcdEndpoints) != 0 {
		return false
	}
	suffix := upgradeBackupSuffix(c, version)
	switch {
	case eb.Spec.StorageType == etcdv1beta2.BackupStorageTypeS3 && eb.Spec.S3 != nil:
		return strings.HasSuffix(eb.Spec.S3.Path, suffix)
	case eb.Spec.StorageType == etcdv1beta2.BackupStorageTypePVC && eb.Spec.PVC != nil:
		return strings.HasSuffix(eb.Spec.PVC.Path, suffix)
	}
	return false
}

// takeUpgradeBackup executes TakeUpgradeBackup: creates the one-shot EtcdBackup a.Name
// from the configured target's storage. Already there: nothing to do.
func (r *Reconciler) takeUpgradeBackup(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	target, err := r.upgradeBackupTarget(ctx, c)
	if err != nil {
		return err
	}
	if target == nil && a.ClaimBytes > 0 {
		return r.takeClaimBackup(ctx, c, o, a) // act_upgradebackup_claim.go
	}
	if target == nil {
		return fmt.Errorf("no EtcdBackup names cluster %s in spec.clusterRef any more", c.Name)
	}
	eb := upgradeBackupFor(c, target, a.Name, a.Version)
	if err := r.Create(ctx, eb); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("create EtcdBackup %s: %w", a.Name, err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonUpgradeBackupPending,
		"backing up to EtcdBackup %s (storage of %s) before the upgrade to %s", eb.Name, target.Name, a.Version)
	return nil
}

// upgradeBackupFor is the one-shot EtcdBackup of the step to version: the target's
// storage, credentials and client TLS, its path suffixed, no schedule and no retention.
func upgradeBackupFor(c *etcdv1beta2.EtcdCluster, target *etcdv1beta2.EtcdBackup, name, version string) *etcdv1beta2.EtcdBackup {
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: c.Namespace,
			Labels: map[string]string{
				etcdv1beta2.UpgradeBackupOfLabel:  c.Name,
				etcdv1beta2.UpgradeBackupUIDLabel: string(c.UID),
			},
		},
		Spec: etcdv1beta2.EtcdBackupSpec{
			ClusterRef:      &etcdv1beta2.EtcdClusterRef{Name: c.Name},
			StorageType:     target.Spec.StorageType,
			ClientTLSSecret: target.Spec.ClientTLSSecret,
		},
	}
	if v, ok := target.Annotations[etcdv1beta2.BackupCompressionAnnotation]; ok {
		eb.Annotations = map[string]string{etcdv1beta2.BackupCompressionAnnotation: v}
	}
	if p := target.Spec.BackupPolicy; p != nil && p.TimeoutInSecond > 0 {
		eb.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{TimeoutInSecond: p.TimeoutInSecond}
	}
	suffix := upgradeBackupSuffix(c, version)
	switch {
	case target.Spec.S3 != nil && target.Spec.StorageType == etcdv1beta2.BackupStorageTypeS3:
		s3 := target.Spec.S3.DeepCopy()
		s3.Path += suffix
		eb.Spec.S3 = s3
	case target.Spec.PVC != nil:
		pvc := target.Spec.PVC.DeepCopy()
		pvc.Path += suffix
		eb.Spec.PVC = pvc
	}
	return eb
}

// recordUpgradeBackup keeps status.upgradeBackup: the step's backup once taken, and, when
// the first member of a minor step moved without one, why.
func (r *Reconciler) recordUpgradeBackup(c *etcdv1beta2.EtcdCluster, o *observation, p *plannedStep) {
	st := &c.Status
	version := render.ClusterVersion(c.Spec)
	if eb := o.upgradeBackup; eb != nil && o.planner.UpgradeBackup != nil && o.planner.UpgradeBackup.State == planner.UpgradeBackupTaken {
		rec := &etcdv1beta2.UpgradeBackupStatus{Version: version, FromVersion: eb.Status.EtcdVersion, Backup: eb.Name,
			Revision: eb.Status.EtcdRevision}
		if !eb.Status.LastSuccessDate.IsZero() {
			t := eb.Status.LastSuccessDate
			rec.Time = &t
		}
		if len(eb.Status.Backups) > 0 {
			rec.Key = eb.Status.Backups[0].Key
		} else if eb.Spec.PVC != nil {
			rec.Key = eb.Spec.PVC.Path
		}
		if ownClaimBackup(eb, c) {
			rec.Claim = eb.Spec.PVC.ClaimName
		}
		if st.UpgradeBackup != nil {
			rec.Created = st.UpgradeBackup.Created // what the operator made stays listed until deleted
		}
		if st.UpgradeBackup == nil || st.UpgradeBackup.Backup != rec.Backup {
			r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonUpgradeBackupTaken,
				"backup before the upgrade to %s taken: EtcdBackup %s, %s, revision %d", version, rec.Backup, rec.Key, rec.Revision)
		}
		if !equality.Semantic.DeepEqual(st.UpgradeBackup, rec) {
			st.UpgradeBackup = rec
		}
		return
	}
	// The first move of a minor step: the first member upgraded, or etcd's downgrade
	// enabled (whose action names only the target minor).
	if p == nil || !p.ran || p.actErr != nil || p.action.Kind != planner.UpgradeMember && p.action.Kind != planner.EnableDowngrade ||
		p.action.StepBackup == nil || p.action.StepBackup.Skipped == "" {
		return
	}
	skipped := p.action.StepBackup.Skipped
	if b := st.UpgradeBackup; b != nil && b.Version == version && b.Skipped == skipped {
		return
	}
	var created []etcdv1beta2.UpgradeBackupCreated
	if st.UpgradeBackup != nil {
		created = st.UpgradeBackup.Created
	}
	st.UpgradeBackup = &etcdv1beta2.UpgradeBackupStatus{Version: version, FromVersion: st.CurrentVersion, Skipped: skipped, Created: created}
	switch skipped {
	case etcdv1beta2.ReasonNoBackupTarget:
		r.Recorder.Eventf(c, corev1.EventTypeWarning, skipped,
			"upgrading to %s without a backup: no EtcdBackup names this cluster in spec.clusterRef (annotate %s=%s to refuse the step without one)",
			version, etcdv1beta2.UpgradeBackupAnnotation, etcdv1beta2.UpgradeBackupRequired)
	case etcdv1beta2.ReasonNoBackupStorage:
		r.Recorder.Eventf(c, corev1.EventTypeWarning, skipped,
			"moving to %s without a backup: no EtcdBackup names this cluster in spec.clusterRef and no StorageClass is the default for a claim of the operator's (annotate %s=%s to refuse the step without one)",
			version, etcdv1beta2.UpgradeBackupAnnotation, etcdv1beta2.UpgradeBackupRequired)
	default:
		r.Recorder.Eventf(c, corev1.EventTypeNormal, skipped, "moving to %s without a backup (%s=%s)",
			version, etcdv1beta2.UpgradeBackupAnnotation, etcdv1beta2.UpgradeBackupSkip)
	}
}

// upgradeBackupMode reads the upgrade-backup annotation; an unknown value is "auto" with
// a warning.
func upgradeBackupMode(c *etcdv1beta2.EtcdCluster) (planner.UpgradeBackupMode, string) {
	switch v := c.Annotations[etcdv1beta2.UpgradeBackupAnnotation]; v {
	case "", etcdv1beta2.UpgradeBackupAuto:
		return planner.UpgradeBackupAuto, ""
	case etcdv1beta2.UpgradeBackupRequired:
		return planner.UpgradeBackupRequired, ""
	case etcdv1beta2.UpgradeBackupSkip:
		return planner.UpgradeBackupSkip, ""
	default:
		return planner.UpgradeBackupAuto, fmt.Sprintf("%s=%q is not one of auto, required, skip; using auto",
			etcdv1beta2.UpgradeBackupAnnotation, v)
	}
}
