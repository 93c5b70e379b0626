package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// A cluster created from a backup carries two annotations, written by the EtcdRestore
// controller when it creates the EtcdCluster. The renderer reads them from the cluster
// itself, so the cluster controller needs to know nothing about restores: every member
// it bootstraps (initial cluster state "new") gets an init container that writes the
// member's data directory from the backup before etcd starts. Members added later
// (state "existing") join as usual and receive the data from their peers.
const (
	// AnnotationRestore holds a RestoreSource as JSON: which backup, pinned to an exact
	// object and its SHA-256, and which EtcdRestore created the cluster.
	AnnotationRestore = "etcd.database.coreos.com/restore"
	// AnnotationRestoreImage is the image of the init container: the operator's own image,
	// whose binary has the `restore` subcommand. It is recorded on the cluster (rather than
	// passed to the renderer) so the cluster controller renders the same pod whatever
	// image the operator itself runs later.
	AnnotationRestoreImage = "etcd.database.coreos.com/restore-image"
)

// Fixed facts about the restore init container.
const (
	// RestoreContainerName is the init container's name.
	RestoreContainerName = "restore"
	// OperatorCommand is the operator binary in the operator image (see the CSV's
	// Deployment); the init container runs `OperatorCommand restore ...`, no shell.
	OperatorCommand = "/manager"
	// RestoreAWSVolumeName is the awsSecret volume, mounted read-only at RestoreAWSDir,
	// the restore subcommand's default --aws-secret-dir.
	RestoreAWSVolumeName = "restore-aws"
	RestoreAWSDir        = "/etc/etcd-operator/aws"
)

// RestoreSource is the value of AnnotationRestore.
type RestoreSource struct {
	// Restore and UID identify the EtcdRestore that created the cluster, so that restore
	// recognises its own cluster (and never adopts one it did not create).
	Restore string `json:"restore"`
	UID     string `json:"uid,omitempty"`
	// S3 locates the backup; S3.Path is the exact object "<bucket>/<key>" (a periodic
	// prefix is resolved to one object before the cluster is created, so every member
	// restores the same backup).
	S3 *v1beta2.S3BackupSource `json:"s3,omitempty"`
	// SHA256 pins the object's content; empty only for backups that carry no checksum.
	SHA256 string `json:"sha256,omitempty"`
}

// Restore reads the restore annotations of a cluster: nil when the cluster was not
// created from a backup, an error naming the annotation when they are malformed.
func Restore(c *v1beta2.EtcdCluster) (*RestoreSource, string, error) {
	raw, ok := c.Annotations[AnnotationRestore]
	if !ok {
		return nil, "", nil
	}
	var src RestoreSource
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&src); err != nil {
		return nil, "", fmt.Errorf("annotation %s: %w", AnnotationRestore, err)
	}
	if err := src.validate(); err != nil {
		return nil, "", fmt.Errorf("annotation %s: %w", AnnotationRestore, err)
	}
	image := strings.TrimSpace(c.Annotations[AnnotationRestoreImage])
	if image == "" {
		return nil, "", fmt.Errorf("annotation %s is set but %s (the operator image that runs the restore step) is not", AnnotationRestore, AnnotationRestoreImage)
	}
	return &src, image, nil
}

// Annotations returns the two annotations for a cluster restored from src by image.
func (src RestoreSource) Annotations(image string) (map[string]string, error) {
	if err := src.validate(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(image) == "" {
		return nil, errors.New("restore: no operator image")
	}
	b, err := json.Marshal(src)
	if err != nil {
		return nil, err
	}
	return map[string]string{AnnotationRestore: string(b), AnnotationRestoreImage: image}, nil
}

func (src RestoreSource) validate() error {
	if src.S3 == nil {
		return errors.New("no backup source (only s3 is supported)")
	}
	if b, k, ok := strings.Cut(src.S3.Path, "/"); !ok || b == "" || k == "" {
		return fmt.Errorf("s3.path %q is not <bucket>/<key>", src.S3.Path)
	}
	if src.S3.AWSSecret == "" {
		return errors.New("s3.awsSecret is empty")
	}
	if src.SHA256 != "" && !sha256RE.MatchString(src.SHA256) {
		return fmt.Errorf("sha256 %q is not 64 hex digits", src.SHA256)
	}
	return nil
}

// restoreValues are the chart's `restore` values: empty without a restore.
func restoreValues(c *v1beta2.EtcdCluster) (map[string]interface{}, error) {
	src, image, err := Restore(c)
	if err != nil || src == nil {
		return map[string]interface{}{}, err
	}
	return map[string]interface{}{
		"image":            image,
		"command":          OperatorCommand,
		"s3Path":           src.S3.Path,
		"s3Endpoint":       src.S3.Endpoint,
		"s3ForcePathStyle": src.S3.ForcePathStyle,
		"awsSecret":        src.S3.AWSSecret,
		"sha256":           strings.ToLower(src.SHA256),
	}, nil
}
