package backup

import (
	"errors"
	"fmt"
	"io"

	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// Client-side encryption of stored objects (see package backupcrypt). A store opened
// with a key (S3Config.Key) encrypts what it puts and decrypts what it gets. The stored
// bytes are compressed first (ciphertext does not compress), then encrypted; the SHA-256
// kept with the object covers the stored, encrypted bytes, so damage is reported as a
// checksum mismatch without the key, while the key authenticates the snapshot itself.

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

// encryptStored encrypts the stored bytes when the store has a key.
func encryptStored(r io.Reader, key *backupcrypt.Key) (io.Reader, error) {
	if key == nil {
		return r, nil
	}
	return backupcrypt.Encrypt(r, key, 0)
}

// checkKey decides from the object's metadata alone whether key can read it.
func checkKey(obj Object, key *backupcrypt.Key, name string) error {
	switch {
	case obj.Encryption == "" && key == nil:
		return nil
	case obj.Encryption == "":
		return fmt.Errorf("%s: %w", name, ErrNotEncrypted)
	case obj.Encryption != backupcrypt.Algorithm:
		return fmt.Errorf("%s: unknown encryption %q", name, obj.Encryption)
	case key == nil:
		return fmt.Errorf("%s: %w (key fingerprint %s)", name, ErrEncrypted, obj.KeyFingerprint)
	case obj.KeyFingerprint != "" && obj.KeyFingerprint != key.Fingerprint():
		return fmt.Errorf("%s: %w (the backup's key has fingerprint %s, the key given has %s)", name, ErrWrongKey, obj.KeyFingerprint, key.Fingerprint())
	}
	return nil
}

// decryptStored returns the plaintext of an encrypted object's stored bytes (already
// checked with checkKey). A header that names another key than the metadata did is
// still refused as a wrong key.
func decryptStored(stored io.Reader, obj Object, key *backupcrypt.Key, name string) (io.Reader, error) {
	if obj.Encryption == "" {
		return stored, nil
	}
	r, err := backupcrypt.Decrypt(stored, key)
	switch {
	case errors.Is(err, backupcrypt.ErrWrongKey):
		return nil, fmt.Errorf("%s: %w: %w", name, ErrWrongKey, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}
