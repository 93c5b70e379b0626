package restore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// withHash appends etcd's integrity hash over db, as etcd does when it streams a
// snapshot: a damaged or foreign database "signed" this way must still be refused.
func withHash(db []byte) []byte {
	h := sha256.Sum256(db)
	return append(bytes.Clone(db), h[:]...)
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckSnapshotFile checks real etcd snapshots and every way one can be broken.
func TestCheckSnapshotFile(t *testing.T) {
	const keys = 40
	snap := etcdtest.Snapshot(t, keys)
	db := snap[:len(snap)-sha256.Size]

	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	st, err := restore.CheckSnapshotFile(write("good", snap))
	if err != nil {
		t.Fatalf("a real snapshot: %v", err)
	}
	if st.TotalKey != keys || st.Revision < keys {
		t.Errorf("status of a real snapshot: %+v, want %d keys", st, keys)
	}

	flipped := bytes.Clone(snap)
	flipped[len(db)/2] ^= 0x01
	// Both bbolt meta pages (the first two 4 KiB pages) overwritten, then the hash
	// recomputed: only bbolt's own checks can tell.
	metaless := bytes.Clone(db)
	copy(metaless[:2*4096], make([]byte, 2*4096))
	for _, tc := range []struct {
		name string
		b    []byte
		// byBolt: the integrity hash matches, only the database checks can refuse it.
		byBolt bool
	}{
		{"truncated by a byte", snap[:len(snap)-1], false},
		{"truncated to its database (no hash)", db, false},
		{"truncated to half", snap[:len(snap)/2], false},
		{"one byte flipped", flipped, false},
		{"random bytes", randomBytes(t, len(snap)), false},
		{"random bytes of a snapshot's length pattern", randomBytes(t, 8*512+sha256.Size), false},
		{"random bytes with a matching hash", withHash(randomBytes(t, 8*4096)), true},
		{"database without meta pages, hash recomputed", withHash(metaless), true},
		{"empty", nil, false},
		{"text", []byte("snapshot bytes"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := restore.CheckSnapshotFile(write(tc.name, tc.b))
			if !errors.Is(err, restore.ErrNotRestorable) {
				t.Fatalf("got %v, want ErrNotRestorable", err)
			}
			if byHash := strings.Contains(err.Error(), "integrity hash"); byHash == tc.byBolt {
				t.Errorf("refused by the wrong check: %v", err)
			}
		})
	}
	if _, err := restore.CheckSnapshotFile(filepath.Join(dir, "absent")); err == nil || errors.Is(err, restore.ErrNotRestorable) {
		t.Errorf("a missing file: %v", err)
	}
	// Checking never changes the file (the restore step checks the file it restores).
	p := write("unchanged", snap)
	if _, err := restore.CheckSnapshotFile(p); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, snap) {
		t.Errorf("the file changed")
	}
}

// TestCheckObject: objects with our checksum and objects without (CoreOS's), good and
// bad, through a store; nothing is left in the download directory.
func TestCheckObject(t *testing.T) {
	snap := etcdtest.Snapshot(t, 10)
	root := t.TempDir()
	s, err := backup.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(key string, b []byte, c backup.Compression) {
		if _, err := s.Put(ctx, key, bytes.NewReader(b), backup.PutOptions{Compression: c}); err != nil {
			t.Fatal(err)
		}
	}
	raw := func(key string, b []byte) { // as CoreOS's operator stored it: no checksum of ours
		if err := os.WriteFile(filepath.Join(root, key), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put("ours.db", snap, backup.CompressionNone)
	put("ours.gz", snap, backup.CompressionGzip)
	put("ours-garbage.db", []byte("not a snapshot, but checksummed"), backup.CompressionNone)
	raw("coreos.db", snap)
	raw("coreos-garbage.db", randomBytes(t, len(snap)))
	raw("coreos-truncated.db", snap[:len(snap)-100])
	put("damaged.db", snap, backup.CompressionNone)
	b, _ := os.ReadFile(filepath.Join(root, "damaged.db"))
	b[len(b)/3] ^= 0xff
	raw("damaged.db", b)

	dl := t.TempDir()
	for _, tc := range []struct {
		key     string
		want    error
		withSHA bool
	}{
		{"ours.db", nil, true},
		{"ours.gz", nil, true},
		{"coreos.db", nil, false},
		{"ours-garbage.db", restore.ErrNotRestorable, true},
		{"coreos-garbage.db", restore.ErrNotRestorable, false},
		{"coreos-truncated.db", restore.ErrNotRestorable, false},
		{"damaged.db", backup.ErrChecksumMismatch, true},
		{"absent.db", backup.ErrNotFound, false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v, err := restore.CheckObject(ctx, s, tc.key, dl)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if v.Status.TotalKey != 10 || (v.Object.SHA256 != "") != tc.withSHA {
					t.Errorf("verified %+v", v)
				}
				// The pin is the stored checksum, else the hash of the bytes read.
				if want := fmt.Sprintf("%x", sha256.Sum256(snap)); (tc.withSHA && v.Pin != v.Object.SHA256) || (!tc.withSHA && v.Pin != want) {
					t.Errorf("pin %s (stored %q, bytes %s)", v.Pin, v.Object.SHA256, want)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if left, _ := os.ReadDir(dl); len(left) != 0 {
		t.Errorf("downloads left behind: %v", left)
	}
}

// TestRestoreRefusesUnrestorableSnapshot: the restore step runs the same check, so an
// object without a checksum that is not a snapshot fails before any data directory is
// written.
func TestRestoreRefusesUnrestorableSnapshot(t *testing.T) {
	root := t.TempDir()
	s, _ := backup.NewFS(root)
	garbage := withHash(randomBytes(t, 4*4096))
	if err := os.WriteFile(filepath.Join(root, "garbage.db"), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	_, err := restore.Restore(context.Background(), restore.Options{Store: s, Key: "garbage.db", Name: "m",
		DataDir: filepath.Join(parent, "data"), PeerURLs: []string{"http://127.0.0.1:2380"},
		InitialCluster: "m=http://127.0.0.1:2380", InitialClusterToken: "t"})
	if !errors.Is(err, restore.ErrNotRestorable) {
		t.Fatalf("got %v", err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("a refused restore left files: %v", left)
	}
}

// TestRestorePinsObjectsWithoutChecksum: the checksum the operator computed when it
// verified an object without one pins the members' restore to those very bytes.
func TestRestorePinsObjectsWithoutChecksum(t *testing.T) {
	snap := etcdtest.Snapshot(t, 3)
	root := t.TempDir()
	s, _ := backup.NewFS(root)
	if err := os.WriteFile(filepath.Join(root, "coreos.db"), snap, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := restore.CheckObject(ctx, s, "coreos.db", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := func(pin string) restore.Options {
		return restore.Options{Store: s, Key: "coreos.db", SHA256: pin, Name: "m", DataDir: filepath.Join(t.TempDir(), "data"),
			PeerURLs: []string{"http://127.0.0.1:2380"}, InitialCluster: "m=http://127.0.0.1:2380", InitialClusterToken: "t"}
	}
	if _, err := restore.Restore(ctx, opts(v.Pin)); err != nil {
		t.Fatalf("restore pinned to the verified bytes: %v", err)
	}
	// Replaced by another valid snapshot since: refused, the pin names other bytes.
	if err := os.WriteFile(filepath.Join(root, "coreos.db"), etcdtest.Snapshot(t, 4), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := restore.Restore(ctx, opts(v.Pin)); !errors.Is(err, restore.ErrChecksumPinned) {
		t.Fatalf("got %v, want ErrChecksumPinned", err)
	}
}
