package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
	cmdrestore "github.com/etcd-operator/etcd-operator/internal/cmd/restore"
)

// AnnotationRestore marks a cluster created from a backup: a RestoreSource as JSON
// (which backup, pinned to an exact object and its SHA-256, and which EtcdRestore created
// the cluster), written by the EtcdRestore controller when it creates the EtcdCluster.
// Anyone who may edit an EtcdCluster can write it too, so the renderer never reads it:
// the cluster controller checks it against the EtcdRestore it names and passes what it
// has verified as Input.Restore. Every member bootstrapped then (initial cluster state
// "new") gets an init container that writes the member's data directory from the backup
// before etcd starts. Members added later (state "existing") join as usual and receive
// the data from their peers.
//
// Earlier versions also wrote etcd.database.coreos.com/restore-image, the image of that
// init container; it is ignored: the step always runs the operator's configured image.
const AnnotationRestore = "etcd.database.coreos.com/restore"

// RestoreStep is how bootstrapping members get their data from a backup.
type RestoreStep struct {
	Source RestoreSource
	// Image is the operator's own image (its binary has the `restore` subcommand), as
	// the operator is configured; never taken from the cluster.
	Image string
	// ChecksPassedForPin: the operator proved (by its own signature) that its
	// verification already ran the snapshot checks on the bytes Source.SHA256 pins, so
	// the step is rendered with --checks-passed-for-pin and skips them when the bytes it
	// downloads hash to that pin. Never set from anything a tenant wrote alone.
	ChecksPassedForPin bool
}

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
	// RestoreBackupVolumeName is the claim of a PVC backup, mounted read-only at
	// RestoreBackupDir and given to the restore subcommand as --dir.
	RestoreBackupVolumeName = "restore-backup"
	RestoreBackupDir        = "/etc/etcd-operator/backup"
	// RecoverClientTLSDir is where the first member of a quorum-loss recovery has the
	// operator's client TLS Secret (the chart's recover-client-tls volume).
	RecoverClientTLSDir = "/etc/etcd-operator/client-tls"
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
	// PVC, instead of S3, is a backup file on a claim (the layout the PVC backup
	// writes: the file plus its checksum sidecar). PVC.Path is an exact file, never a
	// periodic prefix: the operator cannot read the claim to pick the newest one, and
	// members choosing independently could restore different snapshots.
	PVC *v1beta2.PVCBackupSource `json:"pvc,omitempty"`
	// SHA256 pins the object's content: its stored checksum, or for an S3 object without
	// one (CoreOS's) the SHA-256 the operator read when it verified the object. Empty for
	// PVC backups, which only the init container can read (it still verifies the file
	// against its sidecar checksum, and the snapshot itself, and refuses a mismatch).
	SHA256 string `json:"sha256,omitempty"`
	// PinSignature and PinRevision are carried from the EtcdBackup whose verification
	// passed on exactly this object (its status.lastVerifiedPinSignature and
	// lastVerifiedRevision), for a restore that names that EtcdBackup. They are a claim
	// like the rest: the cluster controller lets the members skip the snapshot checks
	// (RestoreStep.ChecksPassedForPin) only if the signature verifies against what it
	// reads itself; otherwise the checks run, and the restore goes on either way.
	PinSignature string `json:"pinSignature,omitempty"`
	PinRevision  int64  `json:"pinRevision,omitempty"`
}

// Location names the backup for messages: s3://<bucket>/<key> or pvc://<claim>/<path>.
func (src RestoreSource) Location() string {
	switch {
	case src.S3 != nil:
		return "s3://" + src.S3.Path
	case src.PVC != nil:
		key, err := CleanBackupPath(src.PVC.Path)
		if err != nil {
			key = src.PVC.Path
		}
		return "pvc://" + src.PVC.ClaimName + "/" + key
	}
	return "(no backup)"
}

// Restore parses the restore annotation of a cluster: nil when the cluster was not
// created from a backup, an error naming the annotation when it is malformed. What it
// returns is a claim, not proof: see AnnotationRestore.
func Restore(c *v1beta2.EtcdCluster) (*RestoreSource, error) {
	raw, ok := c.Annotations[AnnotationRestore]
	if !ok {
		return nil, nil
	}
	var src RestoreSource
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&src); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationRestore, err)
	}
	if err := src.validate(); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationRestore, err)
	}
	return &src, nil
}

// Annotations returns the annotations of a cluster restored from src.
func (src RestoreSource) Annotations() (map[string]string, error) {
	if err := src.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(src)
	if err != nil {
		return nil, err
	}
	return map[string]string{AnnotationRestore: string(b)}, nil
}

func (src RestoreSource) validate() error {
	switch {
	case src.S3 != nil && src.PVC != nil:
		return errors.New("both s3 and pvc are set")
	case src.S3 != nil:
		if b, k, ok := strings.Cut(src.S3.Path, "/"); !ok || b == "" || k == "" {
			return fmt.Errorf("s3.path %q is not <bucket>/<key>", src.S3.Path)
		}
		if err := checkS3Credentials(src.S3); err != nil {
			return err
		}
	case src.PVC != nil:
		if src.PVC.ClaimName == "" {
			return errors.New("pvc.claimName is empty")
		}
		if _, err := CleanBackupPath(src.PVC.Path); err != nil {
			return err
		}
	default:
		return errors.New("no backup source (s3 or pvc)")
	}
	if src.SHA256 != "" && !sha256RE.MatchString(src.SHA256) {
		return fmt.Errorf("sha256 %q is not 64 hex digits", src.SHA256)
	}
	return nil
}

// CleanBackupPath is a PVC backup's path below the claim's root, as the restore
// subcommand's --key takes it. It maps the path exactly as the PVC backup does (cleaned
// below the root, so it can never leave the claim), so spec.pvc.path of an EtcdRestore
// finds what the same spec.pvc.path of an EtcdBackup wrote.
func CleanBackupPath(p string) (string, error) {
	clean := strings.TrimPrefix(path.Clean("/"+p), "/")
	if clean == "" {
		return "", fmt.Errorf("pvc.path %q names no file below the claim's root", p)
	}
	return clean, nil
}

// restoreValues are the chart's `restore` values of a cluster: empty without a restore
// step. The step's flags are each member's restoreArgs (memberRestoreArgs).
func restoreValues(step *RestoreStep) (map[string]interface{}, error) {
	if step == nil {
		return map[string]interface{}{}, nil
	}
	src := step.Source
	if err := src.validate(); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if strings.TrimSpace(step.Image) == "" {
		return nil, errors.New("restore: no operator image")
	}
	// Every key is always present (the chart's templates fail on a missing key).
	v := map[string]interface{}{
		"image": step.Image, "command": OperatorCommand,
		"pvcClaim": "", "awsSecret": "", "s3Ambient": false, "encryptionKeySecret": "",
	}
	if src.PVC != nil {
		v["pvcClaim"] = src.PVC.ClaimName
		return v, nil
	}
	v["awsSecret"] = src.S3.AWSSecret
	v["s3Ambient"] = src.S3.CredentialsSource == v1beta2.S3CredentialsEnvironment
	v["encryptionKeySecret"] = src.S3.EncryptionKeySecret
	return v, nil
}

// memberRestoreArgs are the flags of m's restore init container (none without one): a
// copy of a live member for the first member of a quorum-loss recovery, else the
// cluster's backup for a bootstrapping member of a restored cluster (step validated).
// token is the member's --initial-cluster-token.
func memberRestoreArgs(c *v1beta2.EtcdCluster, m Member, domain string, step *RestoreStep, token string) []string {
	o := cmdrestore.Options{
		Name: m.Name, DataDir: DataDir, InitialAdvertisePeerURLs: PeerURLWithScheme(c, m.Name, domain, m.peerScheme(c)),
		InitialCluster: m.InitialCluster, InitialClusterToken: token,
	}
	switch {
	case m.Recovery != nil:
		o.FromMember, o.MinRevision = m.Recovery.SourceURL, m.Recovery.MinRevision
		if recoveryClientTLSSecret(c) != "" {
			o.ClientTLSDir = RecoverClientTLSDir
		}
	case step != nil && m.InitialClusterState == StateNew:
		o.Source, o.Checksum, o.ChecksPassedForPin = restoreStepSource(c.Namespace, step)
	default:
		return nil
	}
	return cmdrestore.Args(o)
}

// restoreStepSource is where a member of a cluster in namespace restored by step reads
// the backup, the SHA-256 pinning it and whether the snapshot checks already passed on
// the pinned bytes.
func restoreStepSource(namespace string, step *RestoreStep) (inpod.Source, string, bool) {
	src := step.Source
	sha := strings.ToLower(src.SHA256)
	// Only with a pin: the step skips the checks only on bytes proven to be pinned.
	pinned := step.ChecksPassedForPin && sha != ""
	if src.PVC != nil {
		key, _ := CleanBackupPath(src.PVC.Path) // validated by restoreValues
		return inpod.Source{Dir: RestoreBackupDir, Key: key}, sha, pinned
	}
	s := inpod.Source{S3Path: src.S3.Path, S3Endpoint: src.S3.Endpoint, S3ForcePathStyle: src.S3.ForcePathStyle}
	if src.S3.CredentialsSource == v1beta2.S3CredentialsEnvironment {
		// The pod's own S3 identity (e.g. the IAM role of its service account).
		s.S3Ambient = true
	} else {
		s.AWSSecretDir = RestoreAWSDir
	}
	if src.S3.EncryptionKeySecret != "" {
		s.EncryptionKeyFile = RestoreKeyDir + "/" + v1beta2.EncryptionKeySecretKey
		// An encrypted backup must be bound to this namespace and its key (and, for a
		// pin the operator proved, to the pinned revision): one moved there from
		// elsewhere in the bucket, or an older one put back under the key, is refused.
		s.BackupNamespace = namespace
		if pinned && src.PinRevision > 0 {
			s.BackupRevision = src.PinRevision
		}
	}
	return s, sha, pinned
}

// recoveryValues are a member's `recover` values (empty unless it is the first member of
// a quorum-loss recovery) and its --initial-cluster-token.
func recoveryValues(c *v1beta2.EtcdCluster, m Member) (map[string]interface{}, string, error) {
	rec := m.Recovery
	if rec == nil {
		return map[string]interface{}{}, memberToken(c, m), nil
	}
	switch {
	case m.InitialClusterState != StateNew:
		return nil, "", errors.New("a recovering member bootstraps a new cluster (initial cluster state new)")
	case strings.TrimSpace(rec.SourceURL) == "" || strings.TrimSpace(rec.Image) == "":
		return nil, "", errors.New("recovery needs a source member URL and the operator image")
	case rec.Token == "" || rec.Token == ClusterToken(c):
		return nil, "", errors.New("recovery needs a token of its own: old members must never join the new cluster")
	}
	if err := checkDialURL(rec.SourceURL); err != nil {
		return nil, "", fmt.Errorf("recovery source member: %w", err)
	}
	// Every key is always present (the chart's templates fail on a missing key). The
	// step's flags are the member's restoreArgs (memberRestoreArgs).
	return map[string]interface{}{
		"image": rec.Image, "command": OperatorCommand, "clientTLSSecret": recoveryClientTLSSecret(c),
	}, rec.Token, nil
}

// recoveryClientTLSSecret is the operator's client TLS Secret that the first member of a
// quorum-loss recovery copies a live member with ("" without client TLS).
func recoveryClientTLSSecret(c *v1beta2.EtcdCluster) string {
	if ClientTLS(c) {
		return c.Spec.TLS.Static.OperatorSecret
	}
	return ""
}

// memberToken is the --initial-cluster-token of a member that copies no survivor: its
// own Token when it bootstraps a restored cluster, else the cluster's.
func memberToken(c *v1beta2.EtcdCluster, m Member) string {
	if m.Token != "" && m.InitialClusterState == StateNew {
		return m.Token
	}
	return ClusterToken(c)
}
