package backup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// TestSaveSnapshot streams snapshots of a real member into a directory: the periodic
// names carry the revision, the etcd facts are stored with each, and retention keeps the
// newest; an unreachable cluster is an ErrSnapshot.
func TestSaveSnapshot(t *testing.T) {
	cl := etcdtest.StartCluster(t, 1, "v3.7.3")
	ctx := context.Background()
	cli := cl.Client(t)
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: cl.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	store := fsStore(t)

	var last *backup.SnapshotResult
	for i := range 3 {
		put, err := cli.Put(ctx, fmt.Sprintf("k%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		res, err := backup.SaveSnapshot(ctx, admin, store, backup.SnapshotRequest{
			Key: "p/snap", Periodic: true, MaxBackups: 2, Now: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC),
			Metadata: map[string]string{"etcd-backup-name": "b"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Revision < put.Header.Revision || res.Version != "3.7.3" || res.Object.SHA256 == "" {
			t.Errorf("result %+v: want revision ≥ %d, version 3.7.3, a checksum", res, put.Header.Revision)
		}
		if want := backup.PeriodicKey("p/snap", res.Revision, time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)); res.Object.Key != want {
			t.Errorf("key %s, want %s", res.Object.Key, want)
		}
		if (i == 2) != (len(res.Pruned) == 1) {
			t.Errorf("round %d pruned %v", i, res.Pruned)
		}
		last = res
	}
	objs, err := backup.Periodic(ctx, store, "p/snap")
	if err != nil || len(objs) != 2 {
		t.Fatalf("periodic backups %v (%v), want 2", objs, err)
	}
	_, obj, err := readAll(t, store, last.Object.Key)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Metadata["etcd-revision"] != fmt.Sprint(last.Revision) || obj.Metadata["etcd-version"] != "3.7.3" || obj.Metadata["etcd-backup-name"] != "b" {
		t.Errorf("stored metadata %v", obj.Metadata)
	}
	// The key count recorded is what the member held at the recorded revision: k0..k2.
	if rev, n, ok := backup.RecordedFacts(obj.Metadata); !ok || n != 3 || rev != last.Revision {
		t.Errorf("recorded facts: revision %d, %d keys (recorded: %v), want revision %d and 3 keys", rev, n, ok, last.Revision)
	}

	dead, err := etcdadmin.New(etcdadmin.Config{Endpoints: []string{"http://127.0.0.1:1"}, Retry: etcdadmin.Backoff{Budget: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if _, err := backup.SaveSnapshot(ctx, dead, store, backup.SnapshotRequest{Key: "x"}); !errors.Is(err, backup.ErrSnapshot) {
		t.Errorf("unreachable cluster: %v, want ErrSnapshot", err)
	}
}

// TestJobResultFitsTerminationMessage: a huge error is shortened to the kubelet's limit
// and the result still parses.
func TestJobResultFitsTerminationMessage(t *testing.T) {
	j := backup.JobResult{Reason: "StorageError", Error: strings.Repeat("x", 10000), Key: "k"}
	b := j.Encode()
	if len(b) > 4096 {
		t.Fatalf("encoded %d bytes", len(b))
	}
	got, err := backup.ParseJobResult(string(b))
	if err != nil || got.Reason != "StorageError" || got.Key != "k" || !strings.HasSuffix(got.Error, "...") {
		t.Errorf("parsed %+v, %v", got, err)
	}
	if _, err := backup.ParseJobResult("panic: boom"); err == nil {
		t.Error("a log tail parsed as a result")
	}
}
