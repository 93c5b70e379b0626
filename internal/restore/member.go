package restore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// MemberSource is a live etcd member to copy the data from instead of a stored backup:
// the source of a quorum-loss recovery. A member without quorum still streams a snapshot
// of its own backend, so the surviving member with the most data can seed a new cluster.
// There is no stored checksum here; the restore checks the hash etcd appends to every
// snapshot it streams (CheckSnapshotFile).
type MemberSource struct {
	// Endpoint is the member's client URL.
	Endpoint string
	// TLS is the client configuration for an https endpoint.
	TLS *tls.Config
	// MinRevision is the revision the operator saw on the member when it chose it: a
	// snapshot older than that would silently lose writes, so it is refused.
	MinRevision int64
}

// ErrRevisionTooOld reports a member snapshot older than the revision it was chosen for.
var ErrRevisionTooOld = errors.New("member snapshot is older than the revision the recovery was planned with")

func (s MemberSource) String() string { return "member " + s.Endpoint }

// downloadMember streams a snapshot of the member into dst and returns its revision.
func downloadMember(ctx context.Context, s MemberSource, dst *os.File) (int64, error) {
	admin, err := etcdadmin.New(etcdadmin.Config{
		Endpoints:   []string{s.Endpoint},
		TLS:         s.TLS,
		DialTimeout: 5 * time.Second,
		CallTimeout: 10 * time.Second,
	})
	if err != nil {
		return 0, err
	}
	defer admin.Close()
	snap, err := admin.Snapshot(ctx, etcdadmin.SnapshotOptions{Endpoint: s.Endpoint})
	if err != nil {
		return 0, fmt.Errorf("snapshot of %s: %w", s, err)
	}
	defer snap.Close()
	if snap.Revision < s.MinRevision {
		return snap.Revision, fmt.Errorf("%s: %w (revision %d, want at least %d)", s, ErrRevisionTooOld, snap.Revision, s.MinRevision)
	}
	if err := copyInto(dst, snap); err != nil {
		return 0, fmt.Errorf("snapshot of %s: %w", s, err)
	}
	return snap.Revision, nil
}

// memberObject describes a member snapshot in a Result.
func memberObject(s MemberSource, rev int64) backup.Object {
	return backup.Object{Key: fmt.Sprintf("%s@%d", s.Endpoint, rev)}
}
