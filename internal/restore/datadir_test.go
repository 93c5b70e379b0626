package restore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// TestDataDirMatchesEtcdutl restores one snapshot with Restore and with etcdutl's own
// `snapshot restore`, for a member of a 3-member cluster, with and without the revision
// bump, and compares what etcd reads at start: every bucket's keys and values in the
// database, the WAL's metadata, hard state and entries, and the raft snapshot files.
func TestDataDirMatchesEtcdutl(t *testing.T) {
	snap := etcdtest.Snapshot(t, 50)
	dir := t.TempDir()
	snapPath := filepath.Join(dir, "snap.db")
	if err := os.WriteFile(snapPath, snap, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := backup.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), "snap.db", bytes.NewReader(snap), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		token          = "token-1"
		name           = "m1"
		initialCluster = "m0=http://10.0.0.1:2380,m1=http://10.0.0.2:2380,m2=http://10.0.0.3:2380"
	)
	peerURLs := []string{"http://10.0.0.2:2380"}

	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepRevisions=%v", keep), func(t *testing.T) {
			ours := filepath.Join(t.TempDir(), "ours")
			if _, err := restore.Restore(context.Background(), restore.Options{
				Store: s, Key: "snap.db", KeepRevisions: keep,
				Name: name, DataDir: ours, PeerURLs: peerURLs,
				InitialCluster: initialCluster, InitialClusterToken: token,
			}); err != nil {
				t.Fatal(err)
			}
			theirs := filepath.Join(t.TempDir(), "etcdutl")
			cfg := snapshot.RestoreConfig{
				SnapshotPath: snapPath, Name: name, OutputDataDir: theirs, PeerURLs: peerURLs,
				InitialCluster: initialCluster, InitialClusterToken: token,
			}
			if !keep {
				cfg.RevisionBump, cfg.MarkCompacted = restore.RevisionBump, true
			}
			if err := snapshot.NewV3(zap.NewNop()).Restore(cfg); err != nil {
				t.Fatal(err)
			}

			compareDatabases(t, filepath.Join(ours, "member", "snap", "db"), filepath.Join(theirs, "member", "snap", "db"))
			compareWALs(t, filepath.Join(ours, "member", "wal"), filepath.Join(theirs, "member", "wal"))
			compareRaftSnapshots(t, filepath.Join(ours, "member", "snap"), filepath.Join(theirs, "member", "snap"))
		})
	}
}

// compareDatabases compares every bucket's keys and values.
func compareDatabases(t *testing.T, ours, theirs string) {
	t.Helper()
	a, b := readBuckets(t, ours), readBuckets(t, theirs)
	if len(a) == 0 {
		t.Fatal("restored database has no buckets")
	}
	for bucket, kvs := range b {
		got, ok := a[bucket]
		if !ok {
			t.Errorf("bucket %q missing", bucket)
			continue
		}
		for k, v := range kvs {
			if g, ok := got[k]; !ok {
				t.Errorf("bucket %q: key %x missing", bucket, k)
			} else if g != v {
				t.Errorf("bucket %q: key %x = %x, etcdutl wrote %x", bucket, k, g, v)
			}
		}
		for k := range got {
			if _, ok := kvs[k]; !ok {
				t.Errorf("bucket %q: extra key %x", bucket, k)
			}
		}
	}
	for bucket := range a {
		if _, ok := b[bucket]; !ok {
			t.Errorf("extra bucket %q", bucket)
		}
	}
}

func readBuckets(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string]string{}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			kvs := map[string]string{}
			out[string(name)] = kvs
			return b.ForEach(func(k, v []byte) error {
				kvs[string(k)] = string(v)
				return nil
			})
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// compareWALs compares what etcd reads from the WAL when it starts.
func compareWALs(t *testing.T, ours, theirs string) {
	t.Helper()
	readWAL := func(dir string) ([]byte, proto.Message, []proto.Message) {
		w, err := wal.Open(zap.NewNop(), dir, &walpb.Snapshot{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		md, hs, ents, err := w.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		msgs := make([]proto.Message, len(ents))
		for i, e := range ents {
			msgs[i] = e
		}
		return md, hs, msgs
	}
	mdA, hsA, entsA := readWAL(ours)
	mdB, hsB, entsB := readWAL(theirs)
	if !bytes.Equal(mdA, mdB) {
		t.Errorf("WAL metadata %x, etcdutl wrote %x", mdA, mdB)
	}
	if !proto.Equal(hsA, hsB) {
		t.Errorf("hard state %v, etcdutl wrote %v", hsA, hsB)
	}
	if len(entsA) != len(entsB) || len(entsA) != 3 {
		t.Fatalf("%d WAL entries, etcdutl wrote %d (want one per member)", len(entsA), len(entsB))
	}
	for i := range entsA {
		if !proto.Equal(entsA[i], entsB[i]) {
			t.Errorf("WAL entry %d: %v, etcdutl wrote %v", i, entsA[i], entsB[i])
		}
	}
}

// compareRaftSnapshots compares the raft snapshots: their metadata, and the membership
// they carry (a v2 store, in JSON) without the store's modification indices, which
// follow the order etcd happened to add the members in (a map's).
func compareRaftSnapshots(t *testing.T, ours, theirs string) {
	t.Helper()
	read := func(dir string) *raftpb.Snapshot {
		s, err := snap.New(zap.NewNop(), dir).Load()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := read(ours), read(theirs)
	if !proto.Equal(a.Metadata, b.Metadata) {
		t.Errorf("raft snapshot metadata %v, etcdutl wrote %v", a.Metadata, b.Metadata)
	}
	ma, mb := v2Values(t, a.Data), v2Values(t, b.Data)
	if len(ma) == 0 || !maps.Equal(ma, mb) {
		t.Errorf("raft snapshot membership %v, etcdutl wrote %v", ma, mb)
	}
}

// v2Values reads a v2 store's JSON into path -> value for every node with a value.
func v2Values(t *testing.T, data []byte) map[string]string {
	t.Helper()
	type node struct {
		Path     string
		Value    string
		Children map[string]*node
	}
	var st struct{ Root *node }
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(*node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.Value != "" {
			out[n.Path] = n.Value
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(st.Root)
	return out
}

// getCounter is a store that counts its Gets.
type getCounter struct {
	backup.Store
	gets int
}

func (g *getCounter) Get(ctx context.Context, key string) (io.ReadCloser, backup.Object, error) {
	g.gets++
	return g.Store.Get(ctx, key)
}

// TestRestoreRefusesBadMembershipBeforeDownloading: a member name missing from the
// initial cluster, a peer URL that is not the one listed for it, or an unparsable URL
// fail before anything is downloaded, and leave nothing behind.
func TestRestoreRefusesBadMembershipBeforeDownloading(t *testing.T) {
	fs, err := backup.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Put(context.Background(), "snap.db", strings.NewReader("not read"), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]restore.Options{
		"name not in the initial cluster": {Name: "m9", PeerURLs: []string{"http://10.0.0.1:2380"}, InitialCluster: "m0=http://10.0.0.1:2380"},
		"peer URL not the member's":       {Name: "m0", PeerURLs: []string{"http://10.0.0.2:2380"}, InitialCluster: "m0=http://10.0.0.1:2380"},
		"unparsable initial cluster":      {Name: "m0", PeerURLs: []string{"http://10.0.0.1:2380"}, InitialCluster: "m0"},
		"unparsable peer URL":             {Name: "m0", PeerURLs: []string{"10.0.0.1:2380"}, InitialCluster: "m0=http://10.0.0.1:2380"},
	} {
		t.Run(name, func(t *testing.T) {
			store := &getCounter{Store: fs}
			o.Store, o.Key, o.InitialClusterToken = store, "snap.db", "token"
			o.DataDir = filepath.Join(t.TempDir(), "data")
			if _, err := restore.Restore(context.Background(), o); err == nil {
				t.Fatal("restore succeeded")
			} else {
				t.Log(err)
			}
			if store.gets != 0 {
				t.Errorf("the backup was downloaded %d times before the membership was refused", store.gets)
			}
			if left, _ := os.ReadDir(filepath.Dir(o.DataDir)); len(left) != 0 {
				t.Errorf("a refused restore left %v", left)
			}
		})
	}
}
