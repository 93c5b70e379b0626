// Package restore turns a stored backup into the data directory of one member of a new
// etcd cluster: download (verifying the stored SHA-256 while streaming), check the
// snapshot (its own trailing hash, bbolt's consistency), then write around it the data
// directory `etcdutl snapshot restore` writes (datadir.go). It is the step a member pod's
// init container runs (`etcd-operator restore`) before etcd starts.
//
// It never deletes or overwrites anything: an existing data directory means the member
// was restored (or has run) before, and is left as it is.
package restore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// Options describe the backup and the member to restore.
type Options struct {
	// KeepRevisions skips the revision bump (RevisionBump): only a backup verification
	// sets it, because it must read the restored keyspace at the backup's own revision,
	// and its member never serves a client.
	KeepRevisions bool
	// Store holds the backup. Exactly one of Store and Member is set.
	Store backup.Store
	// Member, instead of Store, is a live member whose snapshot is restored.
	Member *MemberSource
	// Key is the backup object. With Latest it is instead the path whose newest periodic
	// backup (<key>_v<rev>_<time>) is restored.
	Key    string
	Latest bool
	// SHA256, if set, pins the exact backup the restore was planned with: it must equal
	// the checksum recorded with the object, or for an object without one (e.g. written
	// by CoreOS's operator) the SHA-256 of its bytes as read (CheckObject's Pin).
	SHA256 string
	// PinVerified says SHA256 is a CheckObject's Pin: the operator ran
	// CheckSnapshotFile on exactly the bytes with that SHA-256 before it planned the
	// restore. The snapshot checks (etcd's integrity hash, bbolt's consistency, every
	// key read) are then not run again here, but only on proof that the bytes
	// downloaded are those bytes (their SHA-256, as read, equals SHA256).
	PinVerified bool
	// Revision, if set, is the etcd revision the backup at Key must hold: an encrypted
	// backup bound to another revision (an older one put back under the key) is refused
	// before it is decrypted (backup.ExpectRevision). Not used with Latest.
	Revision int64

	// The member: the same values etcd is then started with.
	Name                string
	DataDir             string
	PeerURLs            []string
	InitialCluster      string
	InitialClusterToken string

	Log *zap.Logger
}

// Result says what was done.
type Result struct {
	Key     string
	SHA256  string // of the stored object; empty if it carried none
	Skipped bool   // the data directory existed: nothing was done
	// Metadata stored with the object (the etcd facts of backup.SaveSnapshot).
	Metadata map[string]string
	// Read is the SHA-256 of the bytes restored, as proven by reading them (the stored
	// checksum the store verified, else the hash taken while downloading); empty for a
	// member source. It is what a pin of these bytes is.
	Read string
	// ChecksReused: the snapshot checks were not run again, the bytes being proven
	// to be the ones the operator verified (Options.PinVerified).
	ChecksReused bool
}

// ErrChecksumPinned reports that the object's checksum is not the one asked for.
var ErrChecksumPinned = errors.New("backup checksum differs from the expected one")

// Restore builds the member's data directory in a temporary directory beside DataDir,
// downloading the backup straight into it, and renames it to DataDir when it is
// complete, so an interrupted restore leaves no half-written data directory that a
// retry would mistake for a finished one.
func Restore(ctx context.Context, o Options) (Result, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Name == "" || o.DataDir == "" || o.InitialCluster == "" || len(o.PeerURLs) == 0 {
		return Result{}, errors.New("restore: name, data dir, peer URLs and initial cluster are required")
	}
	if (o.Store == nil) == (o.Member == nil) {
		return Result{}, errors.New("restore: give exactly one source, a stored backup or a member")
	}
	if _, err := os.Stat(o.DataDir); err == nil {
		o.Log.Info("data directory exists; not restoring over it", zap.String("dataDir", o.DataDir))
		return Result{Skipped: true}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Result{}, err
	}
	parent := filepath.Dir(filepath.Clean(o.DataDir))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return Result{}, err
	}
	cluster, err := parseNewCluster(o.Log, o)
	if err != nil {
		return Result{}, fmt.Errorf("restore: %w", err)
	}
	tmpDir, err := os.MkdirTemp(parent, ".restoring-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmpDir) // only our own temporary directory
	out := filepath.Join(tmpDir, "data")
	db, err := createSnapshotDB(out)
	if err != nil {
		return Result{}, err
	}
	got, err := fetch(ctx, o, db)
	if err != nil {
		return Result{}, err
	}
	pinProven := o.SHA256 != "" && strings.EqualFold(got.read, o.SHA256) // the bytes' SHA-256, as read, is o.SHA256
	// The same checks the operator ran before it created (or replaced) the cluster;
	// run again unless these are provably the very bytes it checked. They read the
	// whole database two or three times (etcd's integrity hash; bbolt's check and every
	// key): about a second per 256 MiB and member in BenchmarkRestore256MiB, on the
	// critical path of every member's start.
	reused := o.PinVerified && pinProven
	if !reused {
		if _, err := CheckSnapshotFile(db.Name()); err != nil {
			return Result{}, fmt.Errorf("%s: %w", got.from, err)
		}
	}
	if err := cluster.writeDataDir(o.Log, out, revisionBump(o)); err != nil {
		return Result{}, fmt.Errorf("restore of %s: %w", got.from, err)
	}
	if err := os.Rename(out, o.DataDir); err != nil {
		return Result{}, err
	}
	o.Log.Info("restored", zap.String("from", got.from), zap.String("sha256", got.obj.SHA256), zap.String("dataDir", o.DataDir),
		zap.Bool("snapshotChecksReused", reused))
	return Result{Key: got.obj.Key, SHA256: got.obj.SHA256, Metadata: got.obj.Metadata, Read: got.read, ChecksReused: reused}, nil
}

// fetched is what a restore downloaded.
type fetched struct {
	obj  backup.Object
	from string // the source, for messages
	read string // the SHA-256 of the bytes as read (see download); empty for a member
}

// fetch downloads the snapshot o names (a stored backup, or a live member's snapshot)
// into db and closes it.
func fetch(ctx context.Context, o Options, db *os.File) (fetched, error) {
	var got fetched
	var err error
	if o.Member != nil {
		var rev int64
		rev, err = downloadMember(ctx, *o.Member, db)
		got.obj, got.from = memberObject(*o.Member, rev), o.Member.String()
	} else {
		key := o.Key
		if o.Latest {
			var latest backup.Object
			if latest, err = backup.Latest(ctx, o.Store, o.Key); err == nil {
				key = latest.Key
			}
		}
		if err == nil {
			dctx := ctx
			if !o.Latest && o.Revision > 0 {
				dctx = backup.ExpectRevision(ctx, o.Revision)
			}
			got.obj, got.read, err = download(dctx, o.Store, key, o.SHA256, db)
			got.obj.Key, got.from = key, o.Store.String()+"/"+key
		}
		if err == nil && got.obj.SHA256 == "" {
			o.Log.Warn("backup carries no SHA-256 (not written by this operator); relying on the snapshot's own hash", zap.String("key", key))
		}
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return got, err
}

// download writes the object into dst; the store verifies the checksum as the bytes
// stream, so a corrupted object fails here, before anything reads the snapshot. It
// returns the SHA-256 of the bytes read, as proven by reading them: for an object with
// a stored checksum the store's verification (Store.Get fails the read at its end
// unless the bytes hash to it), so they are not hashed twice (a second pass over every
// member's download); for one without, hashed here. With pinned set, either must equal
// it (ErrChecksumPinned). On error dst holds a part of the object: the caller removes it.
func download(ctx context.Context, s backup.Store, key, pinned string, dst *os.File) (backup.Object, string, error) {
	rc, obj, err := s.Get(ctx, key)
	if err != nil {
		return obj, "", err
	}
	defer rc.Close()
	if pinned != "" && obj.SHA256 != "" && !strings.EqualFold(pinned, obj.SHA256) {
		return obj, "", fmt.Errorf("%s/%s: %w (want %s, object has %s)", s, key, ErrChecksumPinned, pinned, obj.SHA256)
	}
	if obj.SHA256 != "" {
		if err := copyInto(dst, rc); err != nil {
			return obj, "", fmt.Errorf("download %s/%s: %w", s, key, err)
		}
		return obj, obj.SHA256, nil
	}
	h := sha256.New()
	if err := copyInto(dst, io.TeeReader(rc, h)); err != nil {
		return obj, "", fmt.Errorf("download %s/%s: %w", s, key, err)
	}
	read := hex.EncodeToString(h.Sum(nil))
	if pinned != "" && !strings.EqualFold(pinned, read) {
		return obj, "", fmt.Errorf("%s/%s: %w (want %s, read %s; the object carries no checksum and was replaced since it was verified)",
			s, key, ErrChecksumPinned, pinned, read)
	}
	return obj, read, nil
}

// copyBuffer is the size of a download's reads and writes: larger than io.Copy's 32 KiB
// (fewer system calls and hash calls), small enough to stay in the CPU's cache between
// the read, the hash and the write. Measured on this project's 2-core machine with three
// writers at once, as three members restoring: 1 MiB writes of 272 MiB cost each writer
// ~0.5 s of system time, 128 KiB ones ~0.12 s.
const copyBuffer = 128 << 10

// createSnapshotDB creates the file the snapshot is downloaded into: its final place
// in the data directory being built at dataDir (see writeDataDir), so that it is never
// copied. It is not synced after the download: the first commit of the backend that
// prepares it (fdatasync) makes it durable before the data directory is renamed into
// place, and a crash before that loses only a temporary directory.
func createSnapshotDB(dataDir string) (*os.File, error) {
	db := snapshotDB(dataDir)
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(db, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

// copyInto copies r into f, through a buffer of copyBuffer bytes.
func copyInto(f *os.File, r io.Reader) error {
	// The wrappers hide ReaderFrom and WriterTo, which would pick their own buffer size.
	_, err := io.CopyBuffer(struct{ io.Writer }{f}, struct{ io.Reader }{r}, make([]byte, copyBuffer))
	return err
}
