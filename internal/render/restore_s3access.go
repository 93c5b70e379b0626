package render

import (
	"errors"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Fixed facts about how the restore step reaches an encrypted backup.
const (
	// RestoreKeyVolumeName is the encryption key Secret (spec.s3.encryptionKeySecret),
	// mounted read-only at RestoreKeyDir; the step reads its key "key".
	RestoreKeyVolumeName = "restore-encryption-key"
	RestoreKeyDir        = "/etc/etcd-operator/encryption-key"
)

// checkS3Credentials: a restore step reads S3 with the awsSecret, or with credentials
// source Environment with its own pod's identity (nothing mounted: what a web identity
// needs, the platform injects into pods of an annotated service account), never both.
func checkS3Credentials(s3 *v1beta2.S3BackupSource) error {
	ambient := s3.CredentialsSource == v1beta2.S3CredentialsEnvironment
	switch {
	case ambient && s3.AWSSecret != "":
		return errors.New("s3.credentialsSource Environment takes no s3.awsSecret")
	case !ambient && s3.AWSSecret == "":
		return errors.New("s3.awsSecret is empty")
	}
	return nil
}
