package v1beta2

// BackupStorageType names where backups are kept.
// +kubebuilder:validation:Enum=S3;ABS;GCS;OSS;PVC
type BackupStorageType string

const (
	// BackupStorageTypeS3 stores backups in any S3-compatible object store (AWS, MinIO,
	// Ceph RGW, GCS interoperability, OSS).
	BackupStorageTypeS3 BackupStorageType = "S3"
	// BackupStorageTypeABS is Azure Blob Storage (accepted for compatibility, not supported).
	BackupStorageTypeABS BackupStorageType = "ABS"
	// BackupStorageTypeGCS is Google Cloud Storage's native API (accepted, not supported;
	// use S3 with GCS's interoperability endpoint).
	BackupStorageTypeGCS BackupStorageType = "GCS"
	// BackupStorageTypeOSS is Alibaba Cloud OSS's native API (accepted, not supported; use
	// S3 with OSS's S3-compatible endpoint).
	BackupStorageTypeOSS BackupStorageType = "OSS"
	// BackupStorageTypePVC stores backups as files on a PersistentVolumeClaim.
	BackupStorageTypePVC BackupStorageType = "PVC"
)

// S3CredentialsSource says where the S3 credentials come from.
// +kubebuilder:validation:Enum=Secret;Environment
type S3CredentialsSource string

const (
	// S3CredentialsSecret reads them from the Secret named by awsSecret (the default).
	S3CredentialsSecret S3CredentialsSource = "Secret"
	// S3CredentialsEnvironment takes the ambient credentials of whoever talks to S3: the
	// environment, a web identity token (IAM roles for service accounts), instance
	// metadata. For what the operator reads or writes itself that is the operator's own
	// identity, allowed only when the operator runs with --allow-ambient-s3-credentials;
	// a restore step uses the member pod's own identity.
	S3CredentialsEnvironment S3CredentialsSource = "Environment"
)

// EncryptionKeySecretKey is the key of the encryption key in the Secret named by
// encryptionKeySecret: 32 bytes, or 64 hex digits.
const EncryptionKeySecretKey = "key"

// S3BackupSource locates backups in an S3-compatible store.
// +kubebuilder:validation:XValidation:rule="!has(self.credentialsSource) || self.credentialsSource != 'Environment' || !has(self.awsSecret) || size(self.awsSecret) == 0",message="credentialsSource Environment takes no awsSecret",fieldPath=".awsSecret"
type S3BackupSource struct {
	// Path is "<bucket>/<key>". One-shot backups are written to exactly this key; periodic
	// backups to "<key>_v<revision>_<2006-01-02-15:04:05>".
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:Pattern=`^[^/]+/.+$`
	Path string `json:"path"`
	// AWSSecret names a Secret with the files "credentials" and "config" in AWS shared-file
	// format (profile default). Required unless credentialsSource is Environment.
	// +optional
	AWSSecret string `json:"awsSecret"`
	// CredentialsSource is Secret (the default: awsSecret) or Environment (the ambient
	// credentials; see S3CredentialsEnvironment). Added by this operator.
	// +optional
	CredentialsSource S3CredentialsSource `json:"credentialsSource,omitempty"`
	// EncryptionKeySecret names a Secret of the same namespace whose key "key" holds a
	// 256-bit key (32 bytes or 64 hex digits). Backups are then encrypted before they
	// leave the operator (AES-256-GCM) and only that key restores them. Added by this
	// operator.
	// +optional
	EncryptionKeySecret string `json:"encryptionKeySecret,omitempty"`
	// Endpoint of an S3-compatible service, e.g. https://minio.example:9000. Empty means AWS.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// ForcePathStyle addresses buckets as <endpoint>/<bucket> instead of
	// <bucket>.<endpoint>; most self-hosted stores need it.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
}

// ABSBackupSource locates backups in Azure Blob Storage (not supported by this operator;
// kept so CoreOS CRs parse and get a clear status).
type ABSBackupSource struct {
	// Path is "<container>/<blob>".
	Path string `json:"path"`
	// ABSSecret names a Secret with keys storage-account, storage-key and optional cloud.
	ABSSecret string `json:"absSecret"`
}

// GCSBackupSource locates backups in Google Cloud Storage (not supported natively; kept so
// CoreOS CRs parse and get a clear status).
type GCSBackupSource struct {
	// Path is "<bucket>/<object>".
	Path string `json:"path"`
	// GCPSecret names a Secret with access-token or credentials.json.
	// +optional
	GCPSecret string `json:"gcpSecret,omitempty"`
}

// OSSBackupSource locates backups in Alibaba Cloud OSS (not supported natively; kept so
// CoreOS CRs parse and get a clear status).
type OSSBackupSource struct {
	// Path is "<bucket>/<object>".
	Path string `json:"path"`
	// OSSSecret names a Secret with accessKeyID and accessKeySecret.
	OSSSecret string `json:"ossSecret"`
	// Endpoint of the OSS region.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
}

// PVCBackupSource stores backups as files on a PersistentVolumeClaim (added by this operator).
type PVCBackupSource struct {
	// ClaimName is an existing PVC in the backup's namespace.
	// +kubebuilder:validation:MinLength=1
	ClaimName string `json:"claimName"`
	// Path is the file name (optionally with directories) under the volume's root.
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
}
