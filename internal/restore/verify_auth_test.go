package restore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// A backup of a cluster with etcd auth on (taken as root) verifies: the check, which has
// no credentials, reads the restored copy, whose auth the restore step turned off.
func TestVerifyBackupOfAuthCluster(t *testing.T) {
	s, _ := backup.NewFS(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := etcdtest.StartCluster(t, 1, "")
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: src.Endpoints(), Username: etcdadmin.RootUser, Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.EnableAuth(ctx, "pw"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := admin.Client().Put(ctx, fmt.Sprintf("/k/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	saved, err := backup.SaveSnapshot(ctx, admin, s, backup.SnapshotRequest{Key: "snap.db"})
	if err != nil {
		t.Fatalf("snapshot as root: %v", err)
	}
	m := src.NewMember("verify", "")
	expectFile := filepath.Join(t.TempDir(), "expect.json")
	o := restore.Options{Store: s, Key: "snap.db", Name: m.Name, DataDir: m.DataDir, PeerURLs: []string{m.PeerURL},
		InitialCluster: m.Name + "=" + m.PeerURL, InitialClusterToken: "verify"}
	if r := restore.RestoreForVerification(ctx, o, expectFile); r.Reason != "" || r.Revision != saved.Revision {
		t.Fatalf("restore step: %+v", r)
	}
	want, err := restore.ReadExpectation(expectFile)
	if err != nil || want.KeyCount == nil {
		t.Fatalf("expectation %+v (%v)", want, err)
	}
	src.StartFromDataDir(m, m.Name+"="+m.PeerURL)
	if got := restore.CheckMember(ctx, m.ClientURL, want); got.Reason != "" || !got.KeyCountChecked || got.KeyCount != *want.KeyCount {
		t.Fatalf("check of an auth cluster's backup: %+v", got)
	}
}
