package v1

// BackupStorageType names where backups are kept.
// +kubebuilder:validation:Enum=S3;ABS;GCS;OSS;PVC
type BackupStorageType string

const (
	// BackupStorageTypeS3 stores backups in any S3-compatible object store (AWS, MinIO,
	// Ceph RGW, GCS interoperability, OSS).
	BackupStorageTypeS3 BackupStorageType = "S3"
	// BackupStorageTypeABS is Azure Blob Storage (accepted, not supported).
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

// StorageSource is where backups are written or read; only the one named by the
// object's storageType is used. The same shape serves EtcdBackup and EtcdRestore.
type StorageSource struct {
	// S3 is an S3-compatible object store.
	// +optional
	S3 *S3Source `json:"s3,omitempty"`
	// ABS is Azure Blob Storage (accepted so converted CoreOS objects keep it; not
	// supported, reported in status).
	// +optional
	ABS *ABSSource `json:"abs,omitempty"`
	// GCS is Google Cloud Storage (not supported natively; use s3 with GCS's
	// interoperability endpoint).
	// +optional
	GCS *GCSSource `json:"gcs,omitempty"`
	// OSS is Alibaba Cloud OSS (not supported natively; use s3 with OSS's S3-compatible
	// endpoint).
	// +optional
	OSS *OSSSource `json:"oss,omitempty"`
	// PVC is a PersistentVolumeClaim in the object's namespace.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`
}

// S3CredentialsSource says where the S3 credentials come from.
// +kubebuilder:validation:Enum=Secret;Environment
type S3CredentialsSource string

const (
	// S3CredentialsSecret reads them from credentialsSecret (the default).
	S3CredentialsSecret S3CredentialsSource = "Secret"
	// S3CredentialsEnvironment takes the ambient credentials of whoever talks to S3: the
	// environment, a web identity token (IAM roles for service accounts), instance
	// metadata. For what the operator reads or writes itself that is the operator's own
	// identity, allowed only when the operator runs with --allow-ambient-s3-credentials;
	// a restore step uses the member pod's own identity.
	S3CredentialsEnvironment S3CredentialsSource = "Environment"
)

// S3Source locates backups in an S3-compatible store.
// +kubebuilder:validation:XValidation:rule="!has(self.credentialsSource) || self.credentialsSource != 'Environment' || !has(self.credentialsSecret) || size(self.credentialsSecret) == 0",message="credentialsSource Environment takes no credentialsSecret",fieldPath=".credentialsSecret"
type S3Source struct {
	// Path is "<bucket>/<key>". A one-shot backup is written to exactly this key, periodic
	// backups to "<key>_v<revision>_<2006-01-02-15:04:05>"; a restore reads this key.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:Pattern=`^[^/]+/.+$`
	Path string `json:"path"`
	// CredentialsSecret names a Secret with the files "credentials" and "config" in AWS
	// shared-file format (profile default). It is v1beta2's awsSecret. Required unless
	// credentialsSource is Environment.
	// +optional
	CredentialsSecret string `json:"credentialsSecret"`
	// CredentialsSource is Secret (the default: credentialsSecret) or Environment (the
	// ambient credentials; see S3CredentialsEnvironment).
	// +optional
	CredentialsSource S3CredentialsSource `json:"credentialsSource,omitempty"`
	// EncryptionKeySecret names a Secret of the same namespace whose key "key" holds a
	// 256-bit key (32 bytes or 64 hex digits). Backups are then encrypted before they
	// leave the operator (AES-256-GCM) and only that key restores them.
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

// ABSSource locates backups in Azure Blob Storage (not supported by this operator).
type ABSSource struct {
	// Path is "<container>/<blob>".
	Path string `json:"path"`
	// CredentialsSecret names a Secret with keys storage-account, storage-key and optional
	// cloud. It is v1beta2's absSecret.
	CredentialsSecret string `json:"credentialsSecret"`
}

// GCSSource locates backups in Google Cloud Storage (not supported natively).
type GCSSource struct {
	// Path is "<bucket>/<object>".
	Path string `json:"path"`
	// CredentialsSecret names a Secret with access-token or credentials.json. It is
	// v1beta2's gcpSecret.
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
}

// OSSSource locates backups in Alibaba Cloud OSS (not supported natively).
type OSSSource struct {
	// Path is "<bucket>/<object>".
	Path string `json:"path"`
	// CredentialsSecret names a Secret with accessKeyID and accessKeySecret. It is
	// v1beta2's ossSecret.
	CredentialsSecret string `json:"credentialsSecret"`
	// Endpoint of the OSS region.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
}

// PVCSource stores backups as files on a PersistentVolumeClaim.
type PVCSource struct {
	// ClaimName is an existing PVC in the object's namespace.
	// +kubebuilder:validation:MinLength=1
	ClaimName string `json:"claimName"`
	// Path is the file name (optionally with directories) under the volume's root.
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
}
