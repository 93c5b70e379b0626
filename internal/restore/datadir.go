package restore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/config"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/etcdserver/cindex"
	"go.etcd.io/etcd/server/v3/storage/backend"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/etcd/server/v3/verify"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// The data directory written here is the one `etcdutl snapshot restore` writes (with
// --bump-revision and --mark-compacted when bump > 0), built with etcd's own storage
// packages. What differs is where the database comes from: etcdutl copies the snapshot
// file into the new data directory and opens the copy three times; here the snapshot is
// downloaded straight to its final place (snapshotDB) and opened once. The copy was
// most of the restore step's time (BenchmarkRestore256MiB: ~4 s of three members' ~5 s
// on this project's machine, the kernel copying page-cache pages while the downloads
// competed for it) and needed twice the database's size on the member's volume.
// TestDataDirMatchesEtcdutl compares the two, file by file and key by key.

// snapshotDB is where the database lives in a member's data directory.
func snapshotDB(dataDir string) string {
	return filepath.Join(dataDir, "member", "snap", "db")
}

// newCluster is the membership a restored member starts with, parsed and checked the
// way etcd checks its own flags at bootstrap, so that a wrong name or URL fails before
// anything is downloaded.
type newCluster struct {
	name    string
	members *membership.RaftCluster
}

func parseNewCluster(lg *zap.Logger, o Options) (newCluster, error) {
	peerURLs, err := types.NewURLs(o.PeerURLs)
	if err != nil {
		return newCluster{}, fmt.Errorf("peer URLs: %w", err)
	}
	initial, err := types.NewURLsMap(o.InitialCluster)
	if err != nil {
		return newCluster{}, fmt.Errorf("initial cluster: %w", err)
	}
	if err := (&config.ServerConfig{
		Logger:              lg,
		Name:                o.Name,
		PeerURLs:            peerURLs,
		InitialPeerURLsMap:  initial,
		InitialClusterToken: o.InitialClusterToken,
	}).VerifyBootstrap(); err != nil {
		return newCluster{}, err
	}
	members, err := membership.NewClusterFromURLsMap(lg, o.InitialClusterToken, initial)
	if err != nil {
		return newCluster{}, err
	}
	return newCluster{name: o.Name, members: members}, nil
}

// writeDataDir turns the snapshot at snapshotDB(dataDir) into a member's data directory:
// the snapshot's integrity hash is cut off (it was checked before: CheckSnapshotFile,
// or the operator's check of these very bytes), the database gets the new cluster's
// membership, the bumped and compacted revision and the consistent index, and a WAL and
// raft snapshot record the new cluster's bootstrap. etcd's storage code panics on a
// database it cannot use, and bbolt may fault on a damaged one: both become an error
// wrapping ErrNotRestorable.
func (c newCluster) writeDataDir(lg *zap.Logger, dataDir string, bump uint64) error {
	return notRestorableOnPanic("", func() error { return c.writeDataDirUnsafe(lg, dataDir, bump) })
}

// writeDataDirUnsafe is writeDataDir, panicking where etcd's storage code does.
func (c newCluster) writeDataDirUnsafe(lg *zap.Logger, dataDir string, bump uint64) error {
	db := snapshotDB(dataDir)
	if err := cutIntegrityHash(db); err != nil {
		return err
	}
	// The raft log a new cluster starts from: one committed configuration change per
	// member, in term 1. The database's consistent index must equal its last index.
	const term = 1
	commit := uint64(len(c.members.MemberIDs()))
	if err := c.prepareBackend(lg, db, bump, commit, term); err != nil {
		return err
	}
	if err := c.writeRaftState(lg, dataDir, commit, term); err != nil {
		return err
	}
	return verify.VerifyIfEnabled(verify.Config{ExactIndex: true, Logger: lg, DataDir: dataDir})
}

// cutIntegrityHash truncates the SHA-256 etcd appends to a snapshot: a database is a
// whole number of sectors, so a snapshot with the hash is n*512+32 bytes long.
func cutIntegrityHash(db string) error {
	st, err := os.Stat(db)
	if err != nil {
		return err
	}
	if n := st.Size(); !hasIntegrityHash(n) {
		return fmt.Errorf("%w: %d bytes has no integrity hash after the database", ErrNotRestorable, n)
	}
	return os.Truncate(db, st.Size()-snapshotHashSize)
}

// prepareBackend opens the database once and, in one batch, replaces the old cluster's
// membership with the new one, bumps the revision and marks it compacted (bump > 0, see
// RevisionBump), and sets the consistent index; closing the backend commits and syncs.
func (c newCluster) prepareBackend(lg *zap.Logger, db string, bump, commit, term uint64) error {
	be := backend.NewDefaultBackend(lg, db, backend.WithMmapSize(0))
	defer be.Close()
	mb := schema.NewMembershipBackend(lg, be)
	if err := mb.TrimMembershipFromBackend(); err != nil {
		return err
	}
	if bump > 0 {
		if err := bumpRevision(lg, be.BatchTx(), int64(bump)); err != nil {
			return err
		}
	}
	c.members.SetBackend(mb)
	for _, m := range c.members.Members() {
		c.members.AddMember(m, true)
	}
	cindex.UpdateConsistentIndexForce(be.BatchTx(), commit, term)
	return nil
}

// bumpRevision writes an empty key revision amount above the newest one and schedules
// the compaction of everything up to it, so that etcd starts at that revision with the
// older ones compacted.
func bumpRevision(lg *zap.Logger, tx backend.BatchTx, amount int64) error {
	tx.LockOutsideApply()
	defer tx.Unlock()
	var latest mvcc.Revision
	if err := tx.UnsafeForEach(schema.Key, func(k, _ []byte) error {
		if r := mvcc.BytesToRev(k); r.GreaterThan(latest) {
			latest = r
		}
		return nil
	}); err != nil {
		return err
	}
	bumped := mvcc.Revision{Main: latest.Main + amount}
	lg.Info("bumping the restored revision and marking it compacted",
		zap.Int64("revision", latest.Main), zap.Int64("bumpedRevision", bumped.Main))
	tx.UnsafePut(schema.Key, mvcc.RevToBytes(bumped, mvcc.NewRevBytes()), []byte{})
	mvcc.UnsafeSetScheduledCompact(tx, bumped.Main)
	return nil
}

// writeRaftState writes the WAL and the raft snapshot of a new cluster whose log is one
// ConfChangeAddNode per member, all committed; the local member is the one named.
func (c newCluster) writeRaftState(lg *zap.Logger, dataDir string, commit, term uint64) error {
	local := c.members.MemberByName(c.name)
	if local == nil {
		return fmt.Errorf("member %q is not in the initial cluster", c.name)
	}
	metadata, err := proto.Marshal(&etcdserverpb.Metadata{
		NodeID:    new(uint64(local.ID)),
		ClusterID: new(uint64(c.members.ID())),
	})
	if err != nil {
		return err
	}
	ids := c.members.MemberIDs() // not empty: the local member is one of them
	voters := make([]uint64, len(ids))
	entries := make([]*raftpb.Entry, len(ids))
	for i, id := range ids {
		member, err := json.Marshal(c.members.Member(id))
		if err != nil {
			return err
		}
		change, err := proto.Marshal(&raftpb.ConfChange{
			Type:    raftpb.ConfChangeAddNode.Enum(),
			NodeId:  new(uint64(id)),
			Context: member,
		})
		if err != nil {
			return err
		}
		voters[i] = uint64(id)
		entries[i] = &raftpb.Entry{
			Type:  raftpb.EntryConfChange.Enum(),
			Term:  new(uint64(term)),
			Index: new(uint64(i + 1)),
			Data:  change,
		}
	}

	snapDir := filepath.Dir(snapshotDB(dataDir)) // exists: the database is in it
	w, err := wal.Create(lg, filepath.Join(dataDir, "member", "wal"), metadata)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Save(&raftpb.HardState{Term: new(term), Vote: new(voters[0]), Commit: new(commit)}, entries); err != nil {
		return err
	}
	confState := &raftpb.ConfState{Voters: voters}
	if err := snap.New(lg, snapDir).SaveSnap(&raftpb.Snapshot{
		Data:     etcdserver.GetMembershipInfoInV2Format(lg, c.members),
		Metadata: &raftpb.SnapshotMetadata{Index: new(commit), Term: new(term), ConfState: confState},
	}); err != nil {
		return err
	}
	return w.SaveSnapshot(&walpb.Snapshot{Index: new(commit), Term: new(term), ConfState: confState})
}
