package backupselect

import (
	"context"
	"errors"

	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// DescribeOwn describes key if it is a complete object of src's EtcdBackup. ok is false,
// with no error, for an object whose metadata names another EtcdBackup, an unfinished
// one (no checksum yet) and one deleted meanwhile: none of them may be restored from.
func DescribeOwn(ctx context.Context, src Source, key string) (e Entry, ok bool, err error) {
	e, err = Describe(ctx, src, key)
	switch {
	case errors.Is(err, errNotOurs) || errors.Is(err, backup.ErrNoChecksum) || errors.Is(err, backup.ErrNotFound):
		return Entry{}, false, nil
	case err != nil:
		return Entry{}, false, err
	}
	return e, true, nil
}
