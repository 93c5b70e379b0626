package restore_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// TestRestoreBumpsAndCompactsRevisions restores a snapshot into a new member and checks,
// on the running etcd, that its revision is RevisionBump above the snapshot's and that
// reading or watching from a revision of the old cluster fails with ErrCompacted instead
// of answering from revisions that now mean something else.
func TestRestoreBumpsAndCompactsRevisions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const keys = 20
	snap := etcdtest.Snapshot(t, keys)
	s, err := backup.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "snap.db", bytes.NewReader(snap), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// The snapshot's revision: one per put on a fresh cluster, after revision 1.
	snapRev := int64(1 + keys)

	dst := etcdtest.StartCluster(t, 0, "")
	m := dst.NewMember("r0", dst.Version)
	ic := m.Name + "=" + m.PeerURL
	if _, err := restore.Restore(ctx, restore.Options{
		Store: s, Key: "snap.db", Name: m.Name, DataDir: m.DataDir, PeerURLs: []string{m.PeerURL},
		InitialCluster: ic, InitialClusterToken: dst.Token,
	}); err != nil {
		t.Fatal(err)
	}
	dst.StartFromDataDir(m, ic)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	got, err := cli.Get(ctx, etcdtest.SnapshotKey(keys-1))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != etcdtest.SnapshotValue(keys-1) {
		t.Fatalf("restored member lacks the snapshot's data: %v", got.Kvs)
	}
	if want := snapRev + restore.RevisionBump; got.Header.Revision != want {
		t.Fatalf("restored revision %d, want the snapshot's %d plus %d = %d", got.Header.Revision, snapRev, restore.RevisionBump, want)
	}
	put, err := cli.Put(ctx, "/after-restore", "x")
	if err != nil {
		t.Fatal(err)
	}
	if put.Header.Revision <= snapRev+restore.RevisionBump {
		t.Errorf("a write after the restore got revision %d, not above the bumped %d", put.Header.Revision, snapRev+restore.RevisionBump)
	}

	// A read at a revision the old cluster had issued.
	if _, err := cli.Get(ctx, etcdtest.SnapshotKey(0), clientv3.WithRev(snapRev)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read at old revision %d: got %v, want ErrCompacted", snapRev, err)
	}
	// A watch resumed from a revision a watcher of the old cluster may hold.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	wr, ok := <-cli.Watch(wctx, "/", clientv3.WithPrefix(), clientv3.WithRev(snapRev+1))
	if !ok {
		t.Fatal("watch closed without a response")
	}
	if wr.CompactRevision != snapRev+restore.RevisionBump || !errors.Is(wr.Err(), rpctypes.ErrCompacted) {
		t.Errorf("watch from old revision %d: compact revision %d, err %v; want %d and ErrCompacted",
			snapRev+1, wr.CompactRevision, wr.Err(), snapRev+restore.RevisionBump)
	}
}
