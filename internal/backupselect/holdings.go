package backupselect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// Metadata keys an EtcdBackup writes with each object (see controllers/etcdbackup) and
// that this package reads back.
const (
	MetaBackupNamespace = "etcd-backup-namespace"
	MetaBackupName      = "etcd-backup-name"
	// MetaBackupUID is the writing EtcdBackup's UID, on record only (not compared).
	MetaBackupUID = "etcd-backup-uid"
	MetaRevision  = "etcd-revision"
)

// Source is where one EtcdBackup's objects are: its store and key, and the EtcdBackup
// itself, whose name objects carry in their metadata.
type Source struct {
	Store     backup.Store
	Key       string
	Namespace string
	Name      string
}

// List returns the entries named like the backup's objects, newest first: every
// periodic backup of Key, with revision and time from its name, and Key itself if it
// exists (a one-shot backup), described. Entries from names are not described yet
// (no size or checksum, and their metadata unchecked).
func List(ctx context.Context, src Source) ([]Entry, error) {
	objs, err := src.Store.List(ctx, src.Key)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, o := range objs {
		if o.Key == src.Key {
			e, err := Describe(ctx, src, o.Key)
			switch {
			case errors.Is(err, errNotOurs) || errors.Is(err, backup.ErrNoChecksum) || errors.Is(err, backup.ErrNotFound):
				continue
			case err != nil:
				return nil, err
			}
			out = append(out, e)
			continue
		}
		if rev, at, ok := backup.ParsePeriodicKey(src.Key, o.Key); ok {
			out = append(out, Entry{Key: o.Key, Revision: rev, Time: at.UTC(), Size: o.Size})
		}
	}
	SortNewestFirst(out)
	return out, nil
}

// errNotOurs: the object's metadata names another EtcdBackup.
var errNotOurs = errors.New("object was written by another EtcdBackup")

// Describe reads an object's metadata and checksum (not its data) into an entry. It
// fails with errNotOurs for an object whose metadata names another EtcdBackup, and with
// backup.ErrNoChecksum for an unfinished one (its checksum not written yet).
func Describe(ctx context.Context, src Source, key string) (Entry, error) {
	rc, obj, err := src.Store.Get(ctx, key)
	if errors.Is(err, backupcrypt.ErrMisplaced) {
		// Encrypted and bound to another namespace, EtcdBackup or key: not ours.
		return Entry{}, fmt.Errorf("%w: %w", errNotOurs, err)
	}
	if err != nil {
		return Entry{}, err
	}
	rc.Close() // only the metadata is wanted
	// An object whose metadata names no EtcdBackup (CoreOS's, an older writer's, or one
	// put there by hand) cannot be attributed and is never taken as the backup's.
	if ns, name := obj.Metadata[MetaBackupNamespace], obj.Metadata[MetaBackupName]; ns != src.Namespace || name != src.Name {
		return Entry{}, fmt.Errorf("%s/%s: %w (%s/%s)", src.Store, key, errNotOurs, ns, name)
	}
	e := Entry{Key: key, Size: obj.Size, SHA256: obj.SHA256, Time: obj.LastModified.UTC()}
	if rev, at, ok := backup.ParsePeriodicKey(src.Key, key); ok {
		e.Revision, e.Time = rev, at.UTC()
	} else if rev, err := strconv.ParseInt(obj.Metadata[MetaRevision], 10, 64); err == nil {
		e.Revision = rev
	}
	return e, nil
}

// describeNext describes entries in order and returns the first n that belong to the
// backup and are complete; the others are skipped.
func describeNext(ctx context.Context, src Source, entries []Entry, n int) ([]Entry, error) {
	var out []Entry
	for _, e := range entries {
		if len(out) == n {
			break
		}
		d, err := Describe(ctx, src, e.Key)
		switch {
		case errors.Is(err, errNotOurs) || errors.Is(err, backup.ErrNoChecksum) || errors.Is(err, backup.ErrNotFound):
			continue // someone else's, unfinished, or deleted meanwhile
		case err != nil:
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Newest returns up to n of the backup's objects, newest first, described.
func Newest(ctx context.Context, src Source, n int) ([]Entry, error) {
	entries, err := List(ctx, src)
	if err != nil {
		return nil, err
	}
	return describeNext(ctx, src, entries, n)
}

// Pick returns the object sel chooses among the backup's objects, described. Objects
// that turn out not to be the backup's (or unfinished) are dropped and the choice is
// made again; nothing admitted leaves an error wrapping ErrNoMatch.
func Pick(ctx context.Context, src Source, sel Selector) (Entry, error) {
	entries, err := List(ctx, src)
	if err != nil {
		return Entry{}, err
	}
	for {
		e, err := Choose(entries, sel)
		if err != nil {
			return Entry{}, fmt.Errorf("%s/%s: %w", src.Store, src.Key, err)
		}
		d, err := describeNext(ctx, src, []Entry{e}, 1)
		if err != nil {
			return Entry{}, err
		}
		if len(d) == 1 {
			return d[0], nil
		}
		entries = slices.DeleteFunc(entries, func(x Entry) bool { return x.Key == e.Key })
	}
}
