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

// Client is a client of the cluster's running members, without credentials and with
// its logs discarded, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Snapshot starts a one-member cluster, writes keys /k/00000.. with known values and
// returns the snapshot etcd streams for it (the bbolt database followed by etcd's
// SHA-256 integrity hash), exactly the bytes a backup stores. The member is stopped
// when the test ends.
func Snapshot(t testing.TB, keys int) []byte {
	t.Helper()
	c := StartCluster(t, 1, "")
	cli := c.Client(t)
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
