package restore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// TestRestoreFromMemberWithoutQuorum is the quorum-loss recovery step: two of three
// members are gone, the survivor still streams its snapshot, and a new one-member cluster
// seeded from it serves every key. A minimum revision above the survivor's is refused.
func TestRestoreFromMemberWithoutQuorum(t *testing.T) {
	src := etcdtest.StartCluster(t, 3, "")
	cli := src.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want := map[string]string{}
	var rev int64
	for i := range 200 {
		k, v := fmt.Sprintf("/k/%04d", i), fmt.Sprint(i)
		r, err := cli.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		want[k], rev = v, r.Header.Revision
	}
	survivor := src.Members[0]
	// The last write is acknowledged once a quorum has it; the survivor, a follower,
	// may apply it later. It must hold rev before the others go, or its snapshot is
	// (rightly) older than the recovery asks for.
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("survivor %s at revision %d", survivor.ClientURL, rev), func() error {
		st, err := cli.Status(ctx, survivor.ClientURL)
		if err != nil {
			return err
		}
		if st.Header.Revision < rev {
			return fmt.Errorf("at revision %d", st.Header.Revision)
		}
		return nil
	})
	cli.Close()
	for _, m := range src.Members[1:] {
		m.Kill(t)
	}

	dst := etcdtest.StartCluster(t, 0, "")
	m := dst.NewMember("recovered", dst.Version)
	ic := m.Name + "=" + m.PeerURL
	opts := func(min int64) restore.Options {
		return restore.Options{
			Member: &restore.MemberSource{Endpoint: survivor.ClientURL, MinRevision: min},
			Name:   m.Name, DataDir: m.DataDir, PeerURLs: []string{m.PeerURL},
			InitialCluster: ic, InitialClusterToken: dst.Token,
		}
	}
	if _, err := restore.Restore(ctx, opts(rev+1)); !errors.Is(err, restore.ErrRevisionTooOld) {
		t.Fatalf("restore with a minimum revision above the survivor's: %v, want ErrRevisionTooOld", err)
	}
	res, err := restore.Restore(ctx, opts(rev))
	if err != nil {
		t.Fatalf("restore from the survivor without quorum: %v", err)
	}
	if res.Skipped || res.Key != fmt.Sprintf("%s@%d", survivor.ClientURL, rev) {
		t.Errorf("result %+v", res)
	}
	dst.StartFromDataDir(m, ic)

	cli, err = clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	r, err := cli.Get(ctx, "/k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != len(want) || r.Header.Revision < rev {
		t.Fatalf("new cluster: %d keys at revision %d, want %d keys at >= %d", len(r.Kvs), r.Header.Revision, len(want), rev)
	}
	for _, kv := range r.Kvs {
		if want[string(kv.Key)] != string(kv.Value) {
			t.Fatalf("key %s = %q, want %q", kv.Key, kv.Value, want[string(kv.Key)])
		}
	}
	ml, err := cli.MemberList(ctx)
	if err != nil || len(ml.Members) != 1 || ml.Members[0].Name != m.Name {
		t.Fatalf("new cluster's members: %v %v", ml, err)
	}
	// The new cluster accepts writes on its own.
	if _, err := cli.Put(ctx, "/after", "x"); err != nil {
		t.Fatal(err)
	}
}
