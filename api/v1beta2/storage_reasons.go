package v1beta2

// Reasons of the SpecApplied condition about the members' claims (spec.pod.
// persistentVolumeClaimSpec). A larger storage request grows the existing claims where
// their StorageClass allows volume expansion; every other claim change, and a smaller
// size, applies to new members only (reason ReasonAppliesToNewMembersOnly).
const (
	// ReasonClaimsExpanding: the storage request grew and the members' claims are being
	// expanded; the message says how many are at the new size and what the others report
	// (FileSystemResizePending, Resizing, ...).
	ReasonClaimsExpanding = "ClaimsExpanding"
	// ReasonExpansionNotAllowed: the storage request grew but some members' claims cannot
	// grow: their StorageClass does not allow volume expansion, is gone, or they have
	// none. The message names the class and the claims; new members get the new size.
	ReasonExpansionNotAllowed = "ExpansionNotAllowed"
	// EventReasonClaimExpanded is the event reason for a member claim whose storage
	// request the operator raised to the spec's.
	EventReasonClaimExpanded = "ClaimExpanded"
)

// Reasons of EtcdBackup and EtcdRestore failures about S3 credentials and client-side
// encryption (spec.s3.credentialsSource, spec.s3.encryptionKeySecret).
const (
	// ReasonAmbientCredentialsRefused: credentialsSource Environment would have the
	// operator use its own identity for this object, which the operator was not started
	// to allow (--allow-ambient-s3-credentials). Name a Secret in spec.s3.awsSecret.
	ReasonAmbientCredentialsRefused = "AmbientCredentialsRefused"
	// ReasonEncryptionKeyError: the encryption key Secret is missing or malformed, the
	// backup was encrypted with another key, or it is encrypted and no key was named (or
	// a key was named and the backup is not encrypted). The message says which, with key
	// fingerprints, never a key.
	ReasonEncryptionKeyError = "EncryptionKeyError"
	// ReasonBackupMisplaced: an encrypted backup is bound (in its authenticated header)
	// to another namespace, EtcdBackup, key or etcd revision than the one read: it was
	// moved or copied in the bucket, or an older backup was put back under a newer one's
	// key. The message names what differs. Nothing was decrypted or restored from it.
	ReasonBackupMisplaced = "BackupMisplaced"
)
