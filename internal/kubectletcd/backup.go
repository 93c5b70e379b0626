package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// BackupOptions are `backup`'s flags.
type BackupOptions struct {
	// Backup names the EtcdBackup to run now when the cluster has several.
	Backup string
	// OneShot creates a one-shot EtcdBackup instead of asking an existing one.
	OneShot bool
	// Where a one-shot goes when no EtcdBackup of the cluster lends its storage.
	S3Path, S3Secret, S3Endpoint string
	S3ForcePathStyle             bool
	PVCClaim, PVCPath            string
	// Wait for the backup to finish, at most Timeout.
	Wait    bool
	Timeout time.Duration
}

// BackupResult is what `backup` did.
type BackupResult struct {
	Backup    string `json:"backup"`
	Action    string `json:"action"` // "backup-now" or "created"
	BackupNow string `json:"backupNow,omitempty"`
	Storage   string `json:"storage"`
	// Set after --wait.
	Finished  bool   `json:"finished"`
	Succeeded bool   `json:"succeeded"`
	Revision  int64  `json:"revision,omitempty"`
	Message   string `json:"message,omitempty"`
}

// Backup takes a backup of the cluster name now: on its EtcdBackup through the
// backup-now annotation (the operator honours each new value once, at most one run per
// 5 minutes per EtcdBackup), or as a new one-shot EtcdBackup.
func (p *Plugin) Backup(ctx context.Context, name string, o BackupOptions) (*BackupResult, error) {
	c, err := p.getCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	backups, err := p.clusterBackups(ctx, c)
	if err != nil {
		return nil, err
	}
	var chosen *etcdv1beta2.EtcdBackup
	if o.Backup != "" {
		for i := range backups {
			if backups[i].Name == o.Backup {
				chosen = &backups[i]
			}
		}
		if chosen == nil {
			return nil, fmt.Errorf("--backup %s: no EtcdBackup of that name backs up cluster %s (its backups: %s)", o.Backup, name, names(backups))
		}
	}
	if o.OneShot || len(backups) == 0 {
		if chosen == nil && len(backups) == 1 {
			chosen = &backups[0]
		}
		if chosen == nil && len(backups) > 1 && o.S3Path == "" && o.PVCClaim == "" {
			return nil, fmt.Errorf("cluster %s has %d EtcdBackups (%s): name the one whose storage the one-shot copies with --backup, or give --s3-path or --pvc-claim", name, len(backups), names(backups))
		}
		eb, err := oneShot(c, chosen, o, p.Now())
		if err != nil {
			return nil, err
		}
		if err := p.C.Create(ctx, eb); err != nil {
			return nil, fmt.Errorf("create EtcdBackup %s: %w", eb.Name, err)
		}
		res := &BackupResult{Backup: eb.Name, Action: "created", Storage: storageOf(eb)}
		if o.Wait {
			return res, p.waitBackup(ctx, eb.Name, "", o.Timeout, res)
		}
		return res, nil
	}
	if chosen == nil {
		if len(backups) > 1 {
			return nil, fmt.Errorf("cluster %s has %d EtcdBackups (%s): name one with --backup", name, len(backups), names(backups))
		}
		chosen = &backups[0]
	}
	value := p.Now().UTC().Format(time.RFC3339Nano)
	patch := client.RawPatch("application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, etcdv1beta2.BackupNowAnnotation, value)))
	if err := p.C.Patch(ctx, chosen, patch); err != nil {
		return nil, fmt.Errorf("annotate EtcdBackup %s: %w", chosen.Name, err)
	}
	res := &BackupResult{Backup: chosen.Name, Action: "backup-now", BackupNow: value, Storage: storageOf(chosen)}
	if o.Wait {
		return res, p.waitBackup(ctx, chosen.Name, value, o.Timeout, res)
	}
	return res, nil
}

// oneShot is a one-shot EtcdBackup of c: to the storage the flags give, else to a new
// key beside the chosen EtcdBackup's (same bucket, Secret, endpoint and encryption).
func oneShot(c *etcdv1beta2.EtcdCluster, like *etcdv1beta2.EtcdBackup, o BackupOptions, now time.Time) (*etcdv1beta2.EtcdBackup, error) {
	stamp := now.UTC().Format("20060102-150405")
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: truncateName(c.Name + "-manual-" + stamp), Namespace: c.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kubectl-etcd"}},
		Spec: etcdv1beta2.EtcdBackupSpec{ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: c.Name}},
	}
	switch {
	case o.S3Path != "":
		if o.PVCClaim != "" {
			return nil, fmt.Errorf("give --s3-path or --pvc-claim, not both")
		}
		if o.S3Secret == "" {
			return nil, fmt.Errorf("--s3-path needs --s3-secret (a Secret with the files credentials and config)")
		}
		if !strings.Contains(strings.TrimPrefix(o.S3Path, "/"), "/") {
			return nil, fmt.Errorf("--s3-path %q: want <bucket>/<key>", o.S3Path)
		}
		eb.Spec.StorageType = etcdv1beta2.BackupStorageTypeS3
		eb.Spec.S3 = &etcdv1beta2.S3BackupSource{Path: o.S3Path, AWSSecret: o.S3Secret, Endpoint: o.S3Endpoint, ForcePathStyle: o.S3ForcePathStyle}
	case o.PVCClaim != "":
		if o.PVCPath == "" {
			return nil, fmt.Errorf("--pvc-claim needs --pvc-path")
		}
		eb.Spec.StorageType = etcdv1beta2.BackupStorageTypePVC
		eb.Spec.PVC = &etcdv1beta2.PVCBackupSource{ClaimName: o.PVCClaim, Path: o.PVCPath}
	case o.S3Secret != "" || o.S3Endpoint != "" || o.PVCPath != "":
		return nil, fmt.Errorf("--s3-secret, --s3-endpoint and --pvc-path need --s3-path or --pvc-claim")
	case like != nil && like.Spec.S3 != nil:
		s3 := *like.Spec.S3
		s3.Path = strings.TrimSuffix(s3.Path, "/") + "-manual-" + stamp
		eb.Spec.StorageType, eb.Spec.S3 = etcdv1beta2.BackupStorageTypeS3, &s3
	case like != nil && like.Spec.PVC != nil:
		pvc := *like.Spec.PVC
		pvc.Path = strings.TrimSuffix(pvc.Path, "/") + "-manual-" + stamp
		eb.Spec.StorageType, eb.Spec.PVC = etcdv1beta2.BackupStorageTypePVC, &pvc
	case like != nil:
		return nil, fmt.Errorf("EtcdBackup %s stores to %s, which a one-shot cannot copy: give --s3-path and --s3-secret, or --pvc-claim and --pvc-path", like.Name, like.Spec.StorageType)
	default:
		return nil, fmt.Errorf("no EtcdBackup names cluster %s: give --s3-path and --s3-secret (and --s3-endpoint, --s3-force-path-style for MinIO and the like), or --pvc-claim and --pvc-path, to take a one-shot backup", c.Name)
	}
	if like != nil {
		if v := like.Annotations[etcdv1beta2.BackupCompressionAnnotation]; v != "" {
			eb.Annotations = map[string]string{etcdv1beta2.BackupCompressionAnnotation: v}
		}
	}
	return eb, nil
}

// truncateName keeps an object name within 63 characters (the one-shot's backup and
// verification pods are named after it).
func truncateName(n string) string {
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-.")
	}
	return n
}

// waitBackup polls the EtcdBackup until it answers the request: for backup-now, until
// status.lastBackupNow records value; for a new one-shot, until it has a Succeeded
// condition.
func (p *Plugin) waitBackup(ctx context.Context, name, value string, timeout time.Duration, res *BackupResult) error {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	var last *etcdv1beta2.EtcdBackup
	err := wait.PollUntilContextTimeout(ctx, p.Poll, timeout, true, func(ctx context.Context) (bool, error) {
		var eb etcdv1beta2.EtcdBackup
		if err := p.C.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, &eb); err != nil {
			return false, err
		}
		last = &eb
		cond := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
		if value != "" {
			return eb.Status.LastBackupNow == value, nil
		}
		return cond != nil, nil
	})
	if err != nil {
		if last != nil && last.Status.LastBackupNow != value && value != "" {
			return fmt.Errorf("EtcdBackup %s has not run backup-now %s within %s (the operator runs at most one per 5 minutes per EtcdBackup; see its events): %w", name, value, timeout, err)
		}
		return fmt.Errorf("waiting for EtcdBackup %s: %w", name, err)
	}
	res.Finished, res.Succeeded, res.Revision = true, last.Status.Succeeded, last.Status.EtcdRevision
	if c := meta.FindStatusCondition(last.Status.Conditions, etcdv1beta2.BackupConditionSucceeded); c != nil {
		res.Message = c.Reason + ": " + c.Message
	}
	if !res.Succeeded {
		return fmt.Errorf("backup %s failed: %s", name, res.Message)
	}
	return nil
}

// PrintBackup writes what Backup did.
func PrintBackup(w io.Writer, format string, r *BackupResult) error {
	if done, err := printStructured(w, format, r); done {
		return err
	}
	switch r.Action {
	case "created":
		fmt.Fprintf(w, "etcdbackup/%s created: one-shot backup to %s\n", r.Backup, r.Storage)
	default:
		fmt.Fprintf(w, "etcdbackup/%s: backup-now %s requested (to %s)\n", r.Backup, r.BackupNow, r.Storage)
	}
	if r.Finished {
		fmt.Fprintf(w, "succeeded=%t revision=%d %s\n", r.Succeeded, r.Revision, r.Message)
	}
	return nil
}

func names(bs []etcdv1beta2.EtcdBackup) string {
	var n []string
	for _, b := range bs {
		n = append(n, b.Name)
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}
