package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// Client-side encryption of stored objects (see package backupcrypt). A store opened
// with a key (S3Config.Key) encrypts what it puts and decrypts what it gets. The stored
// bytes are compressed first (ciphertext does not compress), then encrypted; the SHA-256
// kept with the object covers the stored, encrypted bytes, so damage is reported as a
// checksum mismatch without the key, while the key authenticates the snapshot itself.
//
// Every object is bound (backupcrypt's format version 2) to the namespace and EtcdBackup
// that wrote it, its key and its etcd revision, taken from the metadata the writer
// stores with it (etcd-backup-namespace, etcd-backup-name, etcd-revision; the store's
// own Namespace and Backup where the metadata names none). A reader expects its store's
// Namespace and Backup, the key it asked for, and the revision given with
// ExpectRevision, so an object moved or copied to another key or another backup's
// prefix, or an older object put back under a newer one's key, is refused
// (backupcrypt.ErrMisplaced) before anything is decrypted. Objects of format version 1
// (no binding) still decrypt.

// Metadata of an encrypted object: the format, and the fingerprint of its key (never
// the key), so that a restore with another key is refused as such before a download.
const (
	metaEncryption    = "encryption"
	metaEncryptionKey = "encryption-key-fingerprint"
)

var (
	// ErrEncrypted reports an encrypted object read without a key.
	ErrEncrypted = errors.New("the backup is encrypted and no encryption key was given")
	// ErrWrongKey reports an object encrypted with another key than the one given.
	ErrWrongKey = errors.New("the backup was encrypted with a different key")
	// ErrNotEncrypted reports a plain object read with a key: with a key, only objects
	// that key authenticates are restored, so whoever can write to the bucket cannot
	// slip in a snapshot of their own.
	ErrNotEncrypted = errors.New("the backup is not encrypted, but an encryption key was given")
)

// encryptionMetadata is what an object encrypted with key records.
func encryptionMetadata(key *backupcrypt.Key) map[string]string {
	return map[string]string{metaEncryption: backupcrypt.Algorithm, metaEncryptionKey: key.Fingerprint()}
}

// Metadata naming the writer of an object, as the EtcdBackup controller and
// SaveSnapshot record it.
const (
	metaBackupNamespace = "etcd-backup-namespace"
	metaBackupName      = "etcd-backup-name"
)

// binding is what an object Put stores at key with metadata md is bound to.
func (s *S3) binding(key string, md map[string]string) backupcrypt.Binding {
	b := s.owner
	b.Key = key
	if ns := md[metaBackupNamespace]; ns != "" {
		b.Namespace = ns
	}
	if name := md[metaBackupName]; name != "" {
		b.Backup = name
	}
	b.Revision, _ = strconv.ParseInt(md[MetaRevision], 10, 64)
	return b
}

type expectedRevisionKey struct{}

// ExpectRevision returns a context in which a store's Get of an encrypted object
// refuses one bound to another etcd revision than rev (0: any): a reader that knows
// the revision of the backup it wants (a pinned restore, a verified backup) passes it,
// so an older object put back under the same key is not restored in its place.
func ExpectRevision(ctx context.Context, rev int64) context.Context {
	return context.WithValue(ctx, expectedRevisionKey{}, rev)
}

// expect is what Get of key in ctx expects of an encrypted object's binding.
func (s *S3) expect(ctx context.Context, key string) backupcrypt.Expect {
	rev, _ := ctx.Value(expectedRevisionKey{}).(int64)
	return backupcrypt.Expect{Namespace: s.owner.Namespace, Backup: s.owner.Backup, Key: key, Revision: rev, AllowV1: true}
}

// encryptStored encrypts the stored bytes when the store has a key.
func encryptStored(r io.Reader, key *backupcrypt.Key, bind backupcrypt.Binding) (io.Reader, error) {
	if key == nil {
		return r, nil
	}
	return backupcrypt.Encrypt(r, key, 0, bind)
}

// checkKey decides from the object's metadata alone whether key can read it.
func checkKey(obj Object, key *backupcrypt.Key, name string) error {
	switch {
	case obj.Encryption == "" && key == nil:
		return nil
	case obj.Encryption == "":
		return fmt.Errorf("%s: %w", name, ErrNotEncrypted)
	case obj.Encryption != backupcrypt.Algorithm && obj.Encryption != backupcrypt.AlgorithmV1:
		return fmt.Errorf("%s: unknown encryption %q", name, obj.Encryption)
	case key == nil:
		return fmt.Errorf("%s: %w (key fingerprint %s)", name, ErrEncrypted, obj.KeyFingerprint)
	case obj.KeyFingerprint != "" && obj.KeyFingerprint != key.Fingerprint():
		return fmt.Errorf("%s: %w (the backup's key has fingerprint %s, the key given has %s)", name, ErrWrongKey, obj.KeyFingerprint, key.Fingerprint())
	}
	return nil
}

// decryptStored returns the plaintext of an encrypted object's stored bytes (already
// checked with checkKey), bound as want expects. A header that names another key than
// the metadata did is still refused as a wrong key.
func decryptStored(stored io.Reader, obj Object, key *backupcrypt.Key, name string, want backupcrypt.Expect) (io.Reader, error) {
	if obj.Encryption == "" {
		return stored, nil
	}
	r, _, err := backupcrypt.Decrypt(stored, key, want)
	switch {
	case errors.Is(err, backupcrypt.ErrWrongKey):
		return nil, fmt.Errorf("%s: %w: %w", name, ErrWrongKey, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}
