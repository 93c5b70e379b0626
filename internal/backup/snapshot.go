package backup

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// ErrSnapshot marks a failure to open the snapshot stream from etcd (as opposed to a
// failure of the store), so callers can report the two differently.
var ErrSnapshot = errors.New("etcd snapshot failed")

// SnapshotRequest says where and how SaveSnapshot stores one snapshot.
type SnapshotRequest struct {
	// Key is the object's key; with Periodic, the base of the periodic names.
	Key string
	// Periodic names the object <Key>_v<revision>_<time> (CoreOS naming) and applies
	// MaxBackups and MaxAge retention to the periodic backups of Key.
	Periodic   bool
	MaxBackups int
	MaxAge     time.Duration
	// Now is the time in a periodic name (default time.Now).
	Now         time.Time
	Compression Compression
	// Metadata is stored with the object in addition to the etcd facts (revision,
	// versions, member) that SaveSnapshot adds itself.
	Metadata map[string]string
	// Owner is metadata naming the writer (an EtcdBackup's namespace and name): stored
	// with the object like Metadata, and required of every object retention counts or
	// deletes (Retention.Owner), so it never deletes what another writer stored under
	// the same names, nor an object it cannot attribute.
	Owner map[string]string
	// Endpoint to snapshot; empty: the answering member with the highest revision.
	Endpoint string
}

// SnapshotResult is what was stored.
type SnapshotResult struct {
	Object   Object
	Location string // store and key, for messages
	Endpoint string // the member the snapshot came from
	// Version is the etcd server version of that member; StorageVersion the snapshot's
	// storage version (empty right after a cluster starts).
	Version        string
	StorageVersion string
	Revision       int64
	// Pruned lists the keys retention removed; RetentionErr is a failed retention (the
	// backup itself is stored).
	Pruned       []string
	RetentionErr error
}

// SaveSnapshot streams one snapshot from etcd into the store: the stream goes straight
// into Put, with the length etcd announced for it, so memory stays bounded by the
// store's buffers whatever the database size (an S3 store sends a snapshot of known
// length as one streamed request, without buffers of its own).
// This is the one backup path of the operator, in-process (S3) and in the backup pod
// (a mounted claim). Errors opening the stream wrap ErrSnapshot; store errors are
// returned as the store reports them.
func SaveSnapshot(ctx context.Context, admin *etcdadmin.Admin, store Store, req SnapshotRequest) (*SnapshotResult, error) {
	snap, err := admin.Snapshot(ctx, etcdadmin.SnapshotOptions{Endpoint: req.Endpoint})
	if err != nil {
		return nil, fmt.Errorf("%w: open snapshot stream: %w", ErrSnapshot, err)
	}
	defer snap.Close()

	key := req.Key
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	if req.Periodic {
		key = PeriodicKey(req.Key, snap.Revision, now)
	}
	md := map[string]string{}
	for k, v := range req.Metadata {
		md[k] = v
	}
	for k, v := range req.Owner {
		md[k] = v
	}
	md["etcd-revision"] = strconv.FormatInt(snap.Revision, 10)
	md["etcd-version"] = snap.ServerVersion
	md["etcd-storage-version"] = snap.Version
	md["etcd-member-id"] = etcdadmin.FormatID(snap.MemberID)
	recordKeyCount(ctx, admin, snap, md)

	obj, err := store.Put(ctx, key, snap, PutOptions{Compression: req.Compression, Metadata: md, Size: snap.Size})
	if err != nil {
		return nil, err
	}
	res := &SnapshotResult{
		Object: obj, Location: store.String() + "/" + key, Endpoint: snap.Endpoint,
		Version: snap.ServerVersion, StorageVersion: snap.Version, Revision: snap.Revision,
	}
	if req.Periodic && (req.MaxBackups > 0 || req.MaxAge > 0) {
		res.Pruned, res.RetentionErr = Retain(ctx, store, req.Key, Retention{Keep: req.MaxBackups, MaxAge: req.MaxAge, Now: now, Owner: req.Owner})
	}
	return res, nil
}
