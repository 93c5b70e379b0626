package restoreorigin

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// What an EtcdRestore recorded stays proof after the objects it read change: an
// EtcdRestore that names an EtcdBackup copied that backup's storage into the cluster's
// annotation when it created the cluster, and the backup's spec may move on (a rotated
// Secret, a new path) while the cluster still bootstraps. Judging the annotation against
// the live EtcdBackup would then disown the restore's own cluster. The records below
// do not change with the EtcdBackup.

// CreatedClusterAnnotation is written by the restore controller on an EtcdRestore right
// after it created its cluster: the cluster's name and UID (assigned by the API server)
// and the restore source it wrote into the cluster's annotation. It lives on the
// EtcdRestore, so someone who may only edit the EtcdCluster cannot forge it; whoever may
// edit the EtcdRestore could name any source in its spec anyway.
const CreatedClusterAnnotation = "etcd.database.coreos.com/created-cluster"

// CreatedCluster is the value of CreatedClusterAnnotation.
type CreatedCluster struct {
	Name   string               `json:"name"`
	UID    string               `json:"uid"`
	Source render.RestoreSource `json:"source"`
}

// RecordOf is the CreatedClusterAnnotation value for c, a cluster just created from a
// backup (its UID set by the API server).
func RecordOf(c *etcdv1beta2.EtcdCluster) (string, error) {
	src, err := render.Restore(c)
	if err != nil {
		return "", err
	}
	if src == nil || c.UID == "" {
		return "", fmt.Errorf("EtcdCluster %s has no restore source or no uid to record", c.Name)
	}
	b, err := json.Marshal(CreatedCluster{Name: c.Name, UID: string(c.UID), Source: *src})
	return string(b), err
}

// CheckCreated checks that c is the very cluster er recorded creating (same namespace,
// name and UID) and that its restore annotation still says what er wrote into it.
func CheckCreated(er *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) error {
	raw, ok := er.Annotations[CreatedClusterAnnotation]
	if !ok {
		return fmt.Errorf("EtcdRestore %s records no cluster it created", er.Name)
	}
	var rec CreatedCluster
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return fmt.Errorf("annotation %s of EtcdRestore %s: %w", CreatedClusterAnnotation, er.Name, err)
	}
	src, err := render.Restore(c)
	if err != nil {
		return err
	}
	switch {
	case src == nil:
		return fmt.Errorf("EtcdCluster %s has no restore annotation", c.Name)
	case c.Namespace != er.Namespace || c.Name != rec.Name || c.Name != er.Spec.EtcdCluster.Name:
		return fmt.Errorf("EtcdRestore %s recorded creating EtcdCluster %s, not %s/%s", er.Name, rec.Name, c.Namespace, c.Name)
	case rec.UID == "" || string(c.UID) != rec.UID:
		return fmt.Errorf("EtcdRestore %s recorded creating EtcdCluster %s with uid %q, this one has uid %s", er.Name, c.Name, rec.UID, c.UID)
	case src.Restore != er.Name || src.UID == "" || src.UID != string(er.UID):
		return fmt.Errorf("the annotation names EtcdRestore %s (uid %q), not %s (uid %s)", src.Restore, src.UID, er.Name, er.UID)
	case !reflect.DeepEqual(*src, rec.Source):
		return fmt.Errorf("the annotation's source %s is not the %s EtcdRestore %s recorded writing", src.Location(), rec.Source.Location(), er.Name)
	}
	return nil
}

// CheckChosen checks that src, read from cluster's annotation, names er (name and UID),
// er restores that cluster, and src is pinned to the object er recorded choosing in
// status.backup (its key, and its SHA-256 when the object has one). It proves the
// object, not the storage's Secret or endpoint: enough for the restore to recognise its
// own cluster (which only ever keeps it from deleting one), never enough to mount what
// the annotation names.
func CheckChosen(er *etcdv1beta2.EtcdRestore, cluster string, src *render.RestoreSource) error {
	if err := namesRestore(er, cluster, src); err != nil {
		return err
	}
	switch {
	case er.Status.Backup == nil:
		return fmt.Errorf("EtcdRestore %s has recorded no chosen backup", er.Name)
	case src.S3 == nil:
		return errors.New("the annotation's backup is not on S3")
	}
	_, key, err := backup.SplitS3Path(src.S3.Path)
	if err != nil {
		return err
	}
	chosen := er.Status.Backup
	switch {
	case key != chosen.Key:
		return fmt.Errorf("s3.path %q is not the object %s EtcdRestore %s chose", src.S3.Path, chosen.Key, er.Name)
	case chosen.SHA256 != "" && src.SHA256 != chosen.SHA256:
		return fmt.Errorf("sha256 %q is not the %s of the object EtcdRestore %s chose", src.SHA256, chosen.SHA256, er.Name)
	}
	return nil
}

// RecordedUID is the UID of the cluster er recorded creating, or "".
func RecordedUID(er *etcdv1beta2.EtcdRestore) string {
	var rec CreatedCluster
	if json.Unmarshal([]byte(er.Annotations[CreatedClusterAnnotation]), &rec) != nil {
		return ""
	}
	return rec.UID
}
