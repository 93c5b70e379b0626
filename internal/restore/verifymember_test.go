package restore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// TestVerifyBackupInRealMember is the verification pod's two steps against real etcd: a
// backup taken by SaveSnapshot (which records the key count) is restored, a member starts
// on it, and the check finds the recorded revision and key count; keys written after the
// backup are not counted. Wrong expectations, a member that never starts and bad objects
// fail with the reason that says what is wrong.
func TestVerifyBackupInRealMember(t *testing.T) {
	root := t.TempDir()
	s, _ := backup.NewFS(root)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	src := etcdtest.StartCluster(t, 1, "")
	cli := src.Client(t)
	for i := range 7 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/k/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: src.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	saved, err := backup.SaveSnapshot(ctx, admin, s, backup.SnapshotRequest{Key: "snap.db"})
	if err != nil {
		t.Fatal(err)
	}
	// Written after the backup: the cluster now holds 9 keys, the backup 7.
	for i := 7; i < 9; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/k/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}

	m := src.NewMember("verify", "")
	expectFile := filepath.Join(t.TempDir(), "expect.json")
	opts := func(key, dataDir string) restore.Options {
		return restore.Options{Store: s, Key: key, Name: m.Name, DataDir: dataDir, PeerURLs: []string{m.PeerURL},
			InitialCluster: m.Name + "=" + m.PeerURL, InitialClusterToken: "verify"}
	}
	if r := restore.RestoreForVerification(ctx, opts("snap.db", m.DataDir), expectFile); r.Reason != "" || r.Key != "snap.db" || r.Revision != saved.Revision || r.SHA256 != saved.Object.SHA256 {
		t.Fatalf("restore step: %+v, want key snap.db, revision %d and sha256 %s", r, saved.Revision, saved.Object.SHA256)
	}
	want, err := restore.ReadExpectation(expectFile)
	if err != nil || want.KeyCount == nil || *want.KeyCount != 7 || want.Revision != saved.Revision {
		t.Fatalf("expectation %+v (%v), want 7 keys at revision %d", want, err, saved.Revision)
	}
	src.StartFromDataDir(m, m.Name+"="+m.PeerURL)

	got := restore.CheckMember(ctx, m.ClientURL, want)
	// The check step passes on the SHA-256 of the bytes restored: the pin the operator signs.
	if got.Reason != "" || got.KeyCount != 7 || !got.KeyCountChecked || got.ServedRevision < saved.Revision || got.SHA256 != saved.Object.SHA256 || len(got.SHA256) != 64 {
		t.Fatalf("check of a good backup: %+v", got)
	}
	wrongCount := want
	wrongCount.KeyCount = ptr(int64(9)) // what the cluster holds now, not at the backup
	if got := restore.CheckMember(ctx, m.ClientURL, wrongCount); got.Reason != etcdv1beta2.ReasonKeyCountMismatch || !strings.Contains(got.Error, "holds 7 keys") {
		t.Errorf("check with another key count: %+v", got)
	}
	ahead := want
	ahead.Revision = got.ServedRevision + 100
	if got := restore.CheckMember(ctx, m.ClientURL, ahead); got.Reason != etcdv1beta2.ReasonRevisionMismatch {
		t.Errorf("check with a later revision: %+v", got)
	}
	noCount := want
	noCount.KeyCount = nil
	if got := restore.CheckMember(ctx, m.ClientURL, noCount); got.Reason != "" || got.KeyCountChecked {
		t.Errorf("check of a backup without a key count: %+v", got)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if got := restore.CheckMember(short, "http://127.0.0.1:1", want); got.Reason != etcdv1beta2.ReasonEtcdDidNotStart {
		t.Errorf("check of a member that never started: %+v", got)
	}

	t.Run("bad objects", func(t *testing.T) {
		if _, err := s.Put(ctx, "not-a-snapshot", strings.NewReader(strings.Repeat("x", 4096)), backup.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, "snap.db"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "snap.db"), b[:len(b)/2], 0o644); err != nil { // truncated in place
			t.Fatal(err)
		}
		for key, reason := range map[string]string{
			"absent":         etcdv1beta2.ReasonBackupNotFound,
			"snap.db":        etcdv1beta2.ReasonChecksumMismatch,
			"not-a-snapshot": etcdv1beta2.ReasonInvalidSnapshot,
		} {
			got := restore.RestoreForVerification(ctx, opts(key, filepath.Join(t.TempDir(), "data")), filepath.Join(t.TempDir(), "e.json"))
			if got.Reason != reason || got.Error == "" {
				t.Errorf("%s: %+v, want reason %s", key, got, reason)
			}
		}
	})

	enc := restore.CheckResult{Key: "k", Reason: "X", Error: strings.Repeat("e", 10000)}.Encode()
	if back, err := restore.ParseCheckResult(string(enc)); len(enc) > 4096 || err != nil || back.Key != "k" || back.Reason != "X" {
		t.Errorf("encoded %d bytes, parsed %+v (%v)", len(enc), back, err)
	}
}

func ptr[T any](v T) *T { return &v }
