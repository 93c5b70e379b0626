package kubectletcd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Annotations of an EtcdRestore the operator reads (controllers/etcdrestore), repeated
// here so the plugin does not import the controller.
const (
	restoreClusterSpecAnnotation    = "etcd.database.coreos.com/restore-cluster-spec"
	replaceExistingClusterAnnotaton = "etcd.database.coreos.com/replace-existing-cluster"
)

// RestoreOptions are `restore`'s flags.
type RestoreOptions struct {
	// From names the EtcdBackup whose object is restored.
	From string
	// At picks the newest of its objects taken at or before this time (RFC 3339); raw
	// as given, checked by parseAt.
	At string
	// MinRevision picks only objects holding at least this revision.
	MinRevision int64
	// Size of the new cluster; 0: the replaced cluster's, else the operator's default (3).
	Size int
	// Replace deletes an existing cluster of the name first (the operator does that only
	// after it has verified the backup).
	Replace bool
	Wait    bool
	Timeout time.Duration
}

// RestoreResult is what `restore` did.
type RestoreResult struct {
	Restore  string `json:"restore"`
	Cluster  string `json:"cluster"`
	From     string `json:"from"`
	At       string `json:"at,omitempty"`
	Replaces bool   `json:"replaces,omitempty"`
	// Set after --wait.
	Finished  bool   `json:"finished"`
	Succeeded bool   `json:"succeeded"`
	Backup    string `json:"backup,omitempty"`
	Revision  int64  `json:"revision,omitempty"`
	Message   string `json:"message,omitempty"`
}

// parseAt reads --at. The operator restores whole backups only (no replay of the
// history after one): --at picks the newest backup taken at or before the time.
func parseAt(at string) (*metav1.Time, error) {
	if at == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return nil, fmt.Errorf("--at %q: want an RFC 3339 time such as 2026-12-03T10:00:00Z (the newest backup taken at or before it is restored; etcd backups are snapshots, there is no replay to an arbitrary instant): %v", at, err)
	}
	mt := metav1.NewTime(t)
	return &mt, nil
}

// newRestore builds the EtcdRestore that restores cluster from eb as o says; existing
// is the cluster of that name, if any.
func newRestore(cluster string, eb *etcdv1beta2.EtcdBackup, existing *etcdv1beta2.EtcdCluster, o RestoreOptions, now time.Time) (*etcdv1beta2.EtcdRestore, error) {
	at, err := parseAt(o.At)
	if err != nil {
		return nil, err
	}
	if o.MinRevision < 0 {
		return nil, fmt.Errorf("--min-revision %d: must not be negative", o.MinRevision)
	}
	if o.Size < 0 || o.Size > 99 {
		return nil, fmt.Errorf("--size %d: want 1 to 99 (0: the default)", o.Size)
	}
	if existing != nil && !o.Replace {
		return nil, fmt.Errorf("EtcdCluster %s exists: restore into a new name, or give --replace to have the operator delete it (only after it has verified the backup) and recreate it from the backup", cluster)
	}
	er := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: truncateName(cluster + "-restore-" + now.UTC().Format("20060102-150405")),
			Namespace: eb.Namespace, Annotations: map[string]string{},
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kubectl-etcd"}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: cluster}},
	}
	switch {
	case eb.Spec.S3 != nil:
		// The restore reads the EtcdBackup's storage and chooses among the objects it
		// wrote, newest first unless selected.
		er.Spec.BackupStorageType = etcdv1beta2.BackupStorageTypeS3
		er.Annotations[etcdv1beta2.RestoreBackupRefAnnotation] = eb.Name
		if at != nil {
			er.Annotations[etcdv1beta2.RestoreNewestBeforeAnnotation] = at.UTC().Format(time.RFC3339)
		}
		if o.MinRevision > 0 {
			er.Annotations[etcdv1beta2.RestoreMinRevisionAnnotation] = strconv.FormatInt(o.MinRevision, 10)
		}
	case eb.Spec.PVC != nil:
		if at != nil || o.MinRevision > 0 {
			return nil, fmt.Errorf("EtcdBackup %s stores on a PVC: its restore reads exactly the file at %s, so --at and --min-revision cannot choose among backups", eb.Name, eb.Spec.PVC.Path)
		}
		if o.Replace {
			return nil, fmt.Errorf("EtcdBackup %s stores on a PVC, which the operator cannot verify before deleting a cluster: restore into a new name instead of --replace", eb.Name)
		}
		pvc := *eb.Spec.PVC
		er.Spec.BackupStorageType, er.Spec.PVC = etcdv1beta2.BackupStorageTypePVC, &pvc
	default:
		return nil, fmt.Errorf("EtcdBackup %s stores to %s, which cannot be restored", eb.Name, eb.Spec.StorageType)
	}
	// The new cluster's spec: the replaced cluster's (so TLS, pod policy and size stay;
	// settings v1beta2 keeps in annotations, such as auth, do not carry over), else the
	// operator's defaults (3 members, the backup's etcd version).
	var spec etcdv1beta2.EtcdClusterSpec
	if existing != nil {
		spec = *existing.Spec.DeepCopy()
		spec.Paused = false
	}
	if o.Size > 0 {
		spec.Size = o.Size
	}
	if existing != nil || o.Size > 0 {
		raw, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		er.Annotations[restoreClusterSpecAnnotation] = string(raw)
	}
	if o.Replace {
		er.Annotations[replaceExistingClusterAnnotaton] = "true"
	}
	return er, nil
}

// Restore creates an EtcdRestore of cluster name from the EtcdBackup o.From.
func (p *Plugin) Restore(ctx context.Context, name string, o RestoreOptions) (*RestoreResult, error) {
	if o.From == "" {
		return nil, fmt.Errorf("--from BACKUP is required: the EtcdBackup whose backup to restore")
	}
	var eb etcdv1beta2.EtcdBackup
	if err := p.C.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: o.From}, &eb); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("--from %s: no EtcdBackup of that name in namespace %s", o.From, p.Namespace)
		}
		return nil, err
	}
	var existing *etcdv1beta2.EtcdCluster
	var c etcdv1beta2.EtcdCluster
	switch err := p.C.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, &c); {
	case err == nil:
		existing = &c
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	er, err := newRestore(name, &eb, existing, o, p.Now())
	if err != nil {
		return nil, err
	}
	if err := p.C.Create(ctx, er); err != nil {
		return nil, fmt.Errorf("create EtcdRestore %s: %w", er.Name, err)
	}
	res := &RestoreResult{Restore: er.Name, Cluster: name, From: eb.Name, At: er.Annotations[etcdv1beta2.RestoreNewestBeforeAnnotation], Replaces: existing != nil}
	if !o.Wait {
		return res, nil
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	var last etcdv1beta2.EtcdRestore
	err = wait.PollUntilContextTimeout(ctx, p.Poll, timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.C.Get(ctx, client.ObjectKeyFromObject(er), &last); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(last.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
		return cond != nil && cond.Status != metav1.ConditionUnknown, nil
	})
	if cond := meta.FindStatusCondition(last.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded); cond != nil {
		res.Message = cond.Reason + ": " + cond.Message
	}
	if b := last.Status.Backup; b != nil {
		res.Backup, res.Revision = b.Key, b.Revision
	}
	if err != nil {
		return res, fmt.Errorf("EtcdRestore %s not finished within %s (%s): %w", er.Name, timeout, res.Message, err)
	}
	res.Finished, res.Succeeded = true, last.Status.Succeeded
	if !res.Succeeded {
		return res, fmt.Errorf("EtcdRestore %s failed: %s", er.Name, res.Message)
	}
	return res, nil
}

// PrintRestore writes what Restore did.
func PrintRestore(w io.Writer, format string, r *RestoreResult) error {
	if done, err := printStructured(w, format, r); done {
		return err
	}
	what := "the newest backup"
	if r.At != "" {
		what = "the newest backup taken at or before " + r.At
	}
	verb := "creates"
	if r.Replaces {
		verb = "replaces"
	}
	fmt.Fprintf(w, "etcdrestore/%s created: %s cluster %s from %s of etcdbackup/%s\n", r.Restore, verb, r.Cluster, what, r.From)
	if r.Finished {
		fmt.Fprintf(w, "succeeded=%t backup=%s revision=%d %s\n", r.Succeeded, r.Backup, r.Revision, r.Message)
	}
	return nil
}
