package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

func memberOpts(t *testing.T, s backup.Store, key, pin string, verified bool) restore.Options {
	return restore.Options{Store: s, Key: key, SHA256: pin, PinVerified: verified, Name: "m",
		DataDir: filepath.Join(t.TempDir(), "data"), PeerURLs: []string{"http://127.0.0.1:2380"},
		InitialCluster: "m=http://127.0.0.1:2380", InitialClusterToken: "t"}
}

// TestRestoreReusesChecksOnlyOnProof: a member's restore step skips the snapshot checks
// the operator already ran only when it was told the pin is a verified one AND the bytes
// it downloaded hash to that pin; in every other case it runs them.
func TestRestoreReusesChecksOnlyOnProof(t *testing.T) {
	ctx := context.Background()
	s, err := backup.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// An object with a stored checksum (this operator's backup) ...
	if _, err := s.Put(ctx, "ours.db", strings.NewReader(string(etcdtest.Snapshot(t, 5))), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// ... and one without (CoreOS's), pinned by the SHA-256 the operator read.
	root := t.TempDir()
	bare, _ := backup.NewFS(root)
	if err := os.WriteFile(filepath.Join(root, "coreos.db"), etcdtest.Snapshot(t, 3), 0o600); err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name       string
		store      backup.Store
		key        string
		pin        string // "verify": CheckObject's pin
		verified   bool
		wantReused bool
		wantErr    error
	}{
		{name: "stored checksum, verified pin", store: s, key: "ours.db", pin: "verify", verified: true, wantReused: true},
		{name: "no stored checksum, verified pin", store: bare, key: "coreos.db", pin: "verify", verified: true, wantReused: true},
		{name: "pin not said to be verified", store: s, key: "ours.db", pin: "verify"},
		{name: "no pin", store: s, key: "ours.db", verified: true},
		{name: "stored checksum differs from the pin", store: s, key: "ours.db", pin: other, verified: true, wantErr: restore.ErrChecksumPinned},
		{name: "bytes read differ from the pin", store: bare, key: "coreos.db", pin: other, verified: true, wantErr: restore.ErrChecksumPinned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin := tc.pin
			if pin == "verify" {
				v, err := restore.CheckObject(ctx, tc.store, tc.key, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				pin = v.Pin
			}
			o := memberOpts(t, tc.store, tc.key, pin, tc.verified)
			res, err := restore.Restore(ctx, o)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
				if _, serr := os.Stat(o.DataDir); serr == nil {
					t.Error("a refused restore wrote the data directory")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.ChecksReused != tc.wantReused {
				t.Errorf("checks reused: %v, want %v", res.ChecksReused, tc.wantReused)
			}
			// Read is the pin of the bytes restored, with or without a stored checksum.
			if len(res.Read) != 64 || (pin != "" && res.Read != pin) {
				t.Errorf("read sha256 %q, pin %q", res.Read, pin)
			}
			if _, err := os.Stat(filepath.Join(o.DataDir, "member", "snap", "db")); err != nil {
				t.Errorf("no restored database: %v", err)
			}
		})
	}
}

// TestRestoreRunsChecksOnUnverifiedBytes: bytes that hash to their pin but are not a
// restorable snapshot are refused by the restore step's own checks unless the pin is
// said to be verified; then writing the data directory is what refuses them (etcd's
// backend panics on them; that is turned into an error), and still no data directory
// is written. (The operator's CheckObject never pins such bytes.)
func TestRestoreRunsChecksOnUnverifiedBytes(t *testing.T) {
	ctx := context.Background()
	s, err := backup.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	obj, err := s.Put(ctx, "garbage.db", strings.NewReader(string(withHash(randomBytes(t, 4*4096)))), backup.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := memberOpts(t, s, "garbage.db", obj.SHA256, false)
	if _, err := restore.Restore(ctx, o); !errors.Is(err, restore.ErrNotRestorable) {
		t.Fatalf("unverified pin: got %v, want ErrNotRestorable from the step's own checks", err)
	}
	o = memberOpts(t, s, "garbage.db", obj.SHA256, true)
	_, err = restore.Restore(ctx, o)
	if !errors.Is(err, restore.ErrNotRestorable) || !strings.Contains(err.Error(), "failed to open database") {
		t.Fatalf("verified pin: got %v, want the backend's refusal as ErrNotRestorable (the step's checks reused)", err)
	}
	if left, _ := os.ReadDir(filepath.Dir(o.DataDir)); len(left) != 0 {
		t.Errorf("a failed restore left %v", left)
	}
}
