package restore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// ErrNotRestorable reports a backup that is not a snapshot etcd can be restored from:
// truncated, damaged, or not an etcd snapshot at all. Unlike a checksum mismatch, this
// is decided by the bytes alone, so it holds for backups that carry no checksum of ours
// (e.g. written by CoreOS's operator).
var ErrNotRestorable = errors.New("not a restorable etcd snapshot")

// snapshotHashSize is the length of the SHA-256 etcd appends to every snapshot it
// streams. A restore recognises it by the file's length: a bbolt database is a
// whole number of 512-byte sectors, so a snapshot is n*512 + 32 bytes long.
const (
	snapshotHashSize = sha256.Size
	snapshotSector   = 512
)

// CheckSnapshotFile checks a snapshot file the way a restore depends on it, without
// changing it: etcd's own integrity hash must be present and match the database before
// it (a restore refuses a snapshot without one), and that database must pass
// bbolt's consistency check and be readable by etcdutl's snapshot status. Every failure
// wraps ErrNotRestorable and says which check failed.
func CheckSnapshotFile(path string) (snapshot.Status, error) {
	if err := checkIntegrityHash(path); err != nil {
		return snapshot.Status{}, err
	}
	return readableStatus(path)
}

// checkIntegrityHash compares the trailing SHA-256 with the bytes before it.
func checkIntegrityHash(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	n := st.Size()
	if !hasIntegrityHash(n) {
		return fmt.Errorf("%w: %d bytes is not a database followed by etcd's %d-byte integrity hash (truncated, or not an etcd snapshot)",
			ErrNotRestorable, n, snapshotHashSize)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, n-snapshotHashSize)); err != nil {
		return err
	}
	want := make([]byte, snapshotHashSize)
	if _, err := f.ReadAt(want, n-snapshotHashSize); err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return fmt.Errorf("%w: etcd's integrity hash does not match the database (damaged or truncated)", ErrNotRestorable)
	}
	return nil
}

// hasIntegrityHash says whether a snapshot of n bytes can be a database followed by
// etcd's integrity hash.
func hasIntegrityHash(n int64) bool {
	return n >= snapshotSector+snapshotHashSize && n%snapshotSector == snapshotHashSize
}

// notRestorableOnPanic runs f and turns a panic or a memory fault on this goroutine into
// an error wrapping ErrNotRestorable, its message starting with what. A damaged or
// crafted database can make bbolt panic or fault, and etcd's storage code panics
// (through its logger) on a database it cannot open, where callers need an error.
func notRestorableOnPanic(what string, f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s%v", ErrNotRestorable, what, r)
		}
	}()
	return f()
}

// readableStatus opens the database read-only with etcdutl's snapshot status, which runs
// bbolt's consistency check and reads every key. Only a database whose integrity hash
// matched gets here, so damage is either etcd's own or crafted; a crafted database can
// make bbolt panic or fault instead of returning an error, which is turned into an error
// here where it happens on this goroutine (bbolt runs its page check on a goroutine of
// its own, which recovers panics itself).
func readableStatus(path string) (snapshot.Status, error) {
	var st snapshot.Status
	err := notRestorableOnPanic("the database cannot be read: ", func() error {
		var err error
		if st, err = snapshot.NewV3(zap.NewNop()).Status(path); err != nil {
			return fmt.Errorf("%w: %w", ErrNotRestorable, err)
		}
		return nil
	})
	return st, err
}

// CheckedObject describes a backup that passed CheckObject.
type CheckedObject struct {
	// Object is the stored object, with its stored SHA-256 if it has one.
	Object backup.Object
	// Status is what etcdutl reads from the snapshot (revision, keys, size).
	Status snapshot.Status
	// Pin is the checksum that pins a restore to exactly these bytes (Options.SHA256):
	// the stored SHA-256, or for an object without one the SHA-256 of what was read.
	Pin string
}

// CheckObject downloads the object at key into a temporary file in dir (removed
// before it returns) and checks it exactly as the restore step will before it writes
// a data directory: the stored SHA-256 where the object has one (errors wrap
// backup.ErrChecksumMismatch), then CheckSnapshotFile in every case (ErrNotRestorable).
// An object without a checksum of ours passes on the snapshot's own checks alone.
func CheckObject(ctx context.Context, s backup.Store, key, dir string) (CheckedObject, error) {
	f, err := os.CreateTemp(dir, ".snapshot-")
	if err != nil {
		return CheckedObject{}, err
	}
	defer os.Remove(f.Name())
	obj, read, err := download(ctx, s, key, "", f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return CheckedObject{Object: obj}, err
	}
	st, err := CheckSnapshotFile(f.Name())
	if err != nil {
		return CheckedObject{Object: obj}, fmt.Errorf("%s/%s: %w", s, key, err)
	}
	return CheckedObject{Object: obj, Status: st, Pin: read}, nil
}
