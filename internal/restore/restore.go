// Package restore turns a stored backup into the data directory of one member of a new
// etcd cluster: download (verifying the stored SHA-256 while streaming), then etcdutl's
// snapshot restore (which also checks the snapshot's own trailing hash). It is the step a
// member pod's init container runs (`etcd-operator restore`) before etcd starts.
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
	"runtime/debug"
	"strings"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
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
	// by CoreOS's operator) the SHA-256 of its bytes as read (VerifyBackup's Pin).
	SHA256 string
	// PinVerified says SHA256 is a VerifyBackup's Pin: the operator ran
	// VerifySnapshotFile on exactly the bytes with that SHA-256 before it planned the
	// restore. The snapshot checks (etcd's integrity hash, also the one etcdutl's
	// restore would compare, bbolt's consistency, every key read) are then not run
	// again here, but only on proof that the bytes downloaded are those bytes (their
	// SHA-256, as read, equals SHA256).
	PinVerified bool

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

// Restore downloads the backup into a temporary file beside DataDir, restores it into a
// temporary directory there, and renames that to DataDir, so an interrupted restore
// leaves no half-written data directory that a retry would mistake for a finished one.
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
	var (
		key, snapPath, from string
		read                string
		obj                 backup.Object
		pinProven           bool // the bytes' SHA-256, as read, is o.SHA256
	)
	if o.Member != nil {
		var rev int64
		var err error
		if snapPath, rev, err = downloadMember(ctx, *o.Member, parent); err != nil {
			return Result{}, err
		}
		obj = memberObject(*o.Member, rev)
		key, from = obj.Key, o.Member.String()
	} else {
		key = o.Key
		if o.Latest {
			latest, err := backup.Latest(ctx, o.Store, o.Key)
			if err != nil {
				return Result{}, err
			}
			key = latest.Key
		}
		var err error
		if snapPath, obj, read, err = download(ctx, o.Store, key, parent, o.SHA256); err != nil {
			return Result{}, err
		}
		pinProven = o.SHA256 != "" && strings.EqualFold(read, o.SHA256)
		from = o.Store.String() + "/" + key
		if obj.SHA256 == "" {
			o.Log.Warn("backup carries no SHA-256 (not written by this operator); relying on the snapshot's own hash", zap.String("key", key))
		}
	}
	defer os.Remove(snapPath)
	// The same checks the operator ran before it created (or replaced) the cluster;
	// run again unless these are provably the very bytes it checked. They read the
	// whole database two or three times (etcd's integrity hash, here and in etcdutl's
	// restore; bbolt's check and every key): about a second per 256 MiB and member in
	// BenchmarkRestore256MiB, on the critical path of every member's start.
	reused := o.PinVerified && pinProven
	if !reused {
		if _, err := VerifySnapshotFile(snapPath); err != nil {
			return Result{}, fmt.Errorf("%s: %w", from, err)
		}
	}

	tmpDir, err := os.MkdirTemp(parent, ".restoring-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmpDir) // only our own temporary directory
	out := filepath.Join(tmpDir, "data")
	if err := etcdutlRestore(o.Log, snapshot.RestoreConfig{
		SnapshotPath:        snapPath,
		Name:                o.Name,
		OutputDataDir:       out,
		PeerURLs:            o.PeerURLs,
		InitialCluster:      o.InitialCluster,
		InitialClusterToken: o.InitialClusterToken,
		RevisionBump:        revisionBump(o),
		MarkCompacted:       !o.KeepRevisions,
		// etcd's integrity hash is one of the reused checks: the operator compared it
		// with the database on these very bytes.
		SkipHashCheck: reused,
	}); err != nil {
		return Result{}, fmt.Errorf("etcdutl snapshot restore of %s: %w", from, err)
	}
	if err := os.Rename(out, o.DataDir); err != nil {
		return Result{}, err
	}
	o.Log.Info("restored", zap.String("from", from), zap.String("sha256", obj.SHA256), zap.String("dataDir", o.DataDir),
		zap.Bool("snapshotChecksReused", reused))
	return Result{Key: key, SHA256: obj.SHA256, Metadata: obj.Metadata, Read: read, ChecksReused: reused}, nil
}

// etcdutlRestore runs etcdutl's restore. etcdutl panics (through its logger) on a
// database it cannot open, and bbolt may fault on a damaged one; both become an error
// wrapping ErrNotRestorable, as readableStatus does for the checks. It matters where the
// checks were reused: the restore step then ends with a clear error, not a crash.
func etcdutlRestore(lg *zap.Logger, cfg snapshot.RestoreConfig) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrNotRestorable, r)
		}
	}()
	return snapshot.NewV3(lg).Restore(cfg)
}

// download copies the object to a temporary file in dir; the store verifies the checksum
// as the bytes stream, so a corrupted object fails here, before etcdutl sees it. It
// returns the SHA-256 of the bytes read, as proven by reading them: for an object with
// a stored checksum the store's verification (Store.Get fails the read at its end
// unless the bytes hash to it), so they are not hashed twice (a second pass over every
// member's download); for one without, hashed here. With pinned set, either must equal
// it (ErrChecksumPinned).
func download(ctx context.Context, s backup.Store, key, dir, pinned string) (string, backup.Object, string, error) {
	rc, obj, err := s.Get(ctx, key)
	if err != nil {
		return "", obj, "", err
	}
	defer rc.Close()
	if pinned != "" && obj.SHA256 != "" && !strings.EqualFold(pinned, obj.SHA256) {
		return "", obj, "", fmt.Errorf("%s/%s: %w (want %s, object has %s)", s, key, ErrChecksumPinned, pinned, obj.SHA256)
	}
	if obj.SHA256 != "" {
		p, err := saveTemp(dir, rc)
		if err != nil {
			return "", obj, "", fmt.Errorf("download %s/%s: %w", s, key, err)
		}
		return p, obj, obj.SHA256, nil
	}
	h := sha256.New()
	p, err := saveTemp(dir, io.TeeReader(rc, h))
	if err != nil {
		return "", obj, "", fmt.Errorf("download %s/%s: %w", s, key, err)
	}
	read := hex.EncodeToString(h.Sum(nil))
	if pinned != "" && !strings.EqualFold(pinned, read) {
		os.Remove(p)
		return "", obj, "", fmt.Errorf("%s/%s: %w (want %s, read %s; the object carries no checksum and was replaced since it was verified)",
			s, key, ErrChecksumPinned, pinned, read)
	}
	return p, obj, read, nil
}

// copyBuffer is the size of saveTemp's reads and writes: larger than io.Copy's 32 KiB
// (fewer system calls and hash calls), small enough to stay in the CPU's cache between
// the read, the hash and the write. Measured on this project's 2-core machine with three
// writers at once, as three members restoring: 1 MiB writes of 272 MiB cost each writer
// ~0.5 s of system time, 128 KiB ones ~0.12 s.
const copyBuffer = 128 << 10

// saveTemp copies r into a new temporary file in dir and returns its path; on error
// nothing is left behind. The file is not synced: it lives only until etcdutl has read
// it (a crash loses it, and the retry downloads again), and what must survive is the
// data directory etcdutl writes. Syncing it cost every member's restore ~0.4 s per
// 256 MiB here (BenchmarkRestore256MiB).
func saveTemp(dir string, r io.Reader) (string, error) {
	f, err := os.CreateTemp(dir, ".snapshot-")
	if err != nil {
		return "", err
	}
	_, err = io.CopyBuffer(struct{ io.Writer }{f}, struct{ io.Reader }{r}, make([]byte, copyBuffer))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
