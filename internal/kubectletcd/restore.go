package kubectletcd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	// IgnoreSourceAuth restores a backup of a cluster with etcd authentication into a
	// cluster that will not get the source's credentials (see sourceAuthRefusal); the
	// user then gives it the auth annotations and a copy of the source's root Secret.
	IgnoreSourceAuth bool
	Wait             bool
	Timeout          time.Duration
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

// hasAuth says whether etcd authentication is on in c, or was: its annotations ask for
// it or its AuthEnabled condition says so (auth stays on in etcd, and so in its
// backups, when the annotation is dropped from a stored object).
func hasAuth(c *etcdv1beta2.EtcdCluster) bool {
	if on, _ := etcdv1beta2.AuthOf(c); on {
		return true
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionAuthEnabled && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// sourceAuthRefusal says why restoring a backup of source into cluster would leave the
// operator without credentials; "" when it would not. A backup of a cluster with etcd
// authentication holds etcd's auth state: auth on, and a root user whose password is in
// the source's root Secret. Only replacing the source itself carries that over (the
// operator gives the new cluster the old one's auth annotations and keeps its root
// Secret); a cluster of another name starts without auth annotations, and the operator's
// calls to the restored members are refused. source is nil when the backed-up cluster
// is not found (then nothing can be told).
func sourceAuthRefusal(cluster string, eb *etcdv1beta2.EtcdBackup, existing, source *etcdv1beta2.EtcdCluster, o RestoreOptions) string {
	if source == nil || !hasAuth(source) || o.IgnoreSourceAuth {
		return ""
	}
	if existing != nil && o.Replace && existing.Name == source.Name {
		return ""
	}
	_, secret := etcdv1beta2.AuthOf(source)
	if secret == "" {
		secret = etcdv1beta2.OperatorRootSecretName(source)
	}
	return fmt.Sprintf("EtcdBackup %s backs up EtcdCluster %s, which has etcd authentication on: the restored data keeps auth on with %s's root password (Secret %s), "+
		"and cluster %s would not get it, so the operator could not talk to its members. Either restore into %s itself with --replace "+
		"(the operator carries its auth annotations and root Secret over), or copy Secret %s to a Secret of your own, give --ignore-source-auth, "+
		"and once the restore has created %s annotate it %s=%s and %s=<your copy>",
		eb.Name, source.Name, source.Name, secret, cluster, source.Name, secret, cluster,
		etcdv1beta2.AuthAnnotation, etcdv1beta2.AuthEnabledValue, etcdv1beta2.AuthRootSecretAnnotation)
}

// newRestore builds the EtcdRestore that restores cluster from eb as o says; existing
// is the cluster of that name, if any, and source the cluster eb backs up, if found.
func newRestore(cluster string, eb *etcdv1beta2.EtcdBackup, existing, source *etcdv1beta2.EtcdCluster, o RestoreOptions, now time.Time) (*etcdv1beta2.EtcdRestore, error) {
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
	if why := sourceAuthRefusal(cluster, eb, existing, source, o); why != "" {
		return nil, fmt.Errorf("%s", why)
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
	// The new cluster's spec: the replaced cluster's (so TLS, pod policy and size stay),
	// else the operator's defaults (3 members, the backup's etcd version). Settings
	// v1beta2 keeps in annotations are not in the spec: the operator itself carries a
	// replaced cluster's auth annotations and root Secret over (controllers/etcdrestore,
	// replace_auth.go); into another name auth does not carry (sourceAuthRefusal).
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

// backedUpCluster is the EtcdCluster eb backs up (by clusterRef, else by its endpoints,
// as status lists a cluster's backups), nil when there is none (deleted since).
func (p *Plugin) backedUpCluster(ctx context.Context, eb *etcdv1beta2.EtcdBackup, existing *etcdv1beta2.EtcdCluster) (*etcdv1beta2.EtcdCluster, error) {
	if existing != nil && backsUp(existing, eb) {
		return existing, nil
	}
	if r := eb.Spec.ClusterRef; r != nil {
		var c etcdv1beta2.EtcdCluster
		switch err := p.C.Get(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: r.Name}, &c); {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("get EtcdCluster %s, which EtcdBackup %s backs up: %w", r.Name, eb.Name, err)
		}
		return &c, nil
	}
	var list etcdv1beta2.EtcdClusterList
	if err := p.C.List(ctx, &list, client.InNamespace(eb.Namespace)); err != nil {
		return nil, fmt.Errorf("list EtcdClusters to find the one EtcdBackup %s backs up: %w", eb.Name, err)
	}
	for i := range list.Items {
		if backsUp(&list.Items[i], eb) {
			return &list.Items[i], nil
		}
	}
	return nil, nil
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
	source, err := p.backedUpCluster(ctx, &eb, existing)
	if err != nil {
		return nil, err
	}
	er, err := newRestore(name, &eb, existing, source, o, p.Now())
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
