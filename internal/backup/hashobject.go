package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// HashObject reads the object at key to its end and returns its description and the
// SHA-256 a restore pins it by (what restore.Options.SHA256 compares): its stored
// checksum, which the store proved by the read (Get fails it with ErrChecksumMismatch
// otherwise), or for an object without one the SHA-256 of its bytes as read. Nothing is
// written anywhere and nothing is parsed: this is how the operator learns an object's
// SHA-256 itself. The store's limits bound the read (size, decompression ratio, stalls).
func HashObject(ctx context.Context, s Store, key string) (Object, string, error) {
	rc, obj, err := s.Get(ctx, key)
	if err != nil {
		return obj, "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{rc}, make([]byte, 128<<10)); err != nil {
		return obj, "", fmt.Errorf("read %s/%s: %w", s, key, err)
	}
	if obj.SHA256 != "" {
		return obj, obj.SHA256, nil
	}
	return obj, hex.EncodeToString(h.Sum(nil)), nil
}
