package etcdtest

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Snapshot starts a one-member cluster, writes keys /k/00000.. with known values and
// returns the snapshot etcd streams for it (the bbolt database followed by etcd's
// SHA-256 integrity hash), exactly the bytes a backup stores. The member is stopped
// when the test ends.
func Snapshot(t testing.TB, keys int) []byte {
	t.Helper()
	c := StartCluster(t, 1, "")
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range keys {
		if _, err := cli.Put(ctx, SnapshotKey(i), SnapshotValue(i)); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SnapshotKey and SnapshotValue are the i-th key and value Snapshot writes.
func SnapshotKey(i int) string   { return fmt.Sprintf("/k/%05d", i) }
func SnapshotValue(i int) string { return fmt.Sprintf("value-%d", i) }
