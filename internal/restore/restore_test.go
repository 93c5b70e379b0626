package restore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// backupOf writes keys into a fresh 3-member cluster and stores a snapshot of it.
func backupOf(t *testing.T, s backup.Store, key string, keys int, c backup.Compression) map[string]string {
	t.Helper()
	src := etcdtest.StartCluster(t, 3, "")
	cli := src.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := map[string]string{}
	var rev int64
	for i := range keys {
		k, v := fmt.Sprintf("/k/%05d", i), strings.Repeat(fmt.Sprint(i), 10)
		r, err := cli.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		want[k], rev = v, r.Header.Revision
	}
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: src.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// The snapshot comes from the member with the highest revision among those that
	// answer a status probe (bounded by 2 s). The last write was acknowledged by the
	// member that served it; a follower may apply it later, and on a loaded machine the
	// one that has it may miss the probe: every member must hold it first.
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("every member at revision %d", rev), func() error {
		for _, st := range admin.Status(ctx) {
			if st.Err != nil {
				return st.Err
			}
			if st.Revision < rev {
				return fmt.Errorf("%s at revision %d", st.Endpoint, st.Revision)
			}
		}
		return nil
	})
	snap, err := admin.Snapshot(ctx, etcdadmin.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if _, err := s.Put(ctx, key, snap, backup.PutOptions{Compression: c}); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestRestoreNewCluster restores every member of a new 3-member cluster from one backup,
// starts it, and compares every key.
func TestRestoreNewCluster(t *testing.T) {
	s, err := backup.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := "c/periodic"
	want := backupOf(t, s, backup.PeriodicKey(base, 1, time.Now()), 300, backup.CompressionGzip)

	dst := etcdtest.StartCluster(t, 0, "") // an empty cluster: a new token, no members yet
	var ms []*etcdtest.Member
	var ic []string
	for i := range 3 {
		m := dst.NewMember(fmt.Sprintf("r%d", i), dst.Version)
		ms = append(ms, m)
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	for _, m := range ms {
		res, err := restore.Restore(ctx, restore.Options{
			Store: s, Key: base, Latest: true,
			Name: m.Name, DataDir: m.DataDir, PeerURLs: []string{m.PeerURL},
			InitialCluster: strings.Join(ic, ","), InitialClusterToken: dst.Token,
		})
		if err != nil {
			t.Fatalf("restore %s: %v", m.Name, err)
		}
		if res.Skipped || res.SHA256 == "" || !strings.HasPrefix(res.Key, base+"_v1_") {
			t.Errorf("restore %s: %+v", m.Name, res)
		}
	}
	// Started together: each restored member needs the others for a quorum before it
	// reports healthy.
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { dst.StartFromDataDir(m, strings.Join(ic, ",")) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	cli := dst.Client(t)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := cli.Get(cctx, "/k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range r.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	if len(got) != len(want) {
		t.Fatalf("restored cluster has %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s = %q, want %q", k, got[k], v)
		}
	}
	ml, err := cli.MemberList(cctx)
	if err != nil || len(ml.Members) != 3 {
		t.Fatalf("member list %v %v", ml, err)
	}
	for _, m := range ml.Members {
		if !strings.HasPrefix(m.Name, "r") {
			t.Errorf("restored cluster lists a member of the source cluster: %s", m.Name)
		}
	}

	t.Run("existing data dir is left alone", func(t *testing.T) {
		m := ms[0]
		before := listDir(t, m.DataDir)
		res, err := restore.Restore(ctx, restore.Options{Store: s, Key: base, Latest: true, Name: m.Name, DataDir: m.DataDir,
			PeerURLs: []string{m.PeerURL}, InitialCluster: strings.Join(ic, ","), InitialClusterToken: dst.Token})
		if err != nil || !res.Skipped {
			t.Fatalf("restore over existing data: %+v %v", res, err)
		}
		if after := listDir(t, m.DataDir); fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("data dir changed")
		}
	})
}

func listDir(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		out = append(out, p)
		return nil
	})
	return out
}

func TestRestoreRefusesBadBackups(t *testing.T) {
	root := t.TempDir()
	s, _ := backup.NewFS(root)
	ctx := context.Background()
	backupOf(t, s, "snap.db", 50, backup.CompressionNone)
	_, obj, err := s.Get(ctx, "snap.db")
	if err != nil {
		t.Fatal(err)
	}
	opts := func(dataDir string) restore.Options {
		return restore.Options{Store: s, Key: "snap.db", Name: "m", DataDir: dataDir, PeerURLs: []string{"http://127.0.0.1:2380"},
			InitialCluster: "m=http://127.0.0.1:2380", InitialClusterToken: "t"}
	}
	t.Run("pinned checksum differs", func(t *testing.T) {
		o := opts(filepath.Join(t.TempDir(), "data"))
		o.SHA256 = strings.Repeat("0", 64)
		if _, err := restore.Restore(ctx, o); !errors.Is(err, restore.ErrChecksumPinned) {
			t.Fatalf("got %v", err)
		}
		o.SHA256 = obj.SHA256
		if _, err := restore.Restore(ctx, o); err != nil {
			t.Fatalf("the right pin: %v", err)
		}
	})
	t.Run("missing backup", func(t *testing.T) {
		o := opts(filepath.Join(t.TempDir(), "data"))
		o.Key = "absent"
		if _, err := restore.Restore(ctx, o); !errors.Is(err, backup.ErrNotFound) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("corrupted backup", func(t *testing.T) {
		p := filepath.Join(root, "snap.db")
		b, _ := os.ReadFile(p)
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		parent := t.TempDir()
		o := opts(filepath.Join(parent, "data"))
		if _, err := restore.Restore(ctx, o); !errors.Is(err, backup.ErrChecksumMismatch) {
			t.Fatalf("got %v", err)
		}
		if left := listDir(t, parent); len(left) != 1 {
			t.Errorf("a failed restore left files behind: %v", left)
		}
	})
}
