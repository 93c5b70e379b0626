package backup

import (
	"context"
	"strconv"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// Metadata stored with every snapshot (besides the SHA-256) that a verification checks a
// restored member against.
const (
	// MetaRevision is the revision the snapshot holds at least (the member's revision as
	// the stream opened).
	MetaRevision = "etcd-revision"
	// MetaKeyCount is the number of keys the member held at MetaRevision, asked of it as
	// the snapshot was taken: what the cluster held, not what the snapshot says.
	MetaKeyCount = "etcd-key-count"
	// MetaVersion is the etcd server version of the member the snapshot came from.
	MetaVersion = "etcd-version"
)

// keyCountTimeout bounds the key count, which runs while the snapshot stream waits.
const keyCountTimeout = 10 * time.Second

// recordKeyCount adds MetaKeyCount to md. A count that cannot be read (e.g. the revision
// was compacted meanwhile) leaves it out: the backup is still good, and its verification
// then checks the revision alone and says so.
func recordKeyCount(ctx context.Context, admin *etcdadmin.Admin, snap *etcdadmin.Snapshot, md map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, keyCountTimeout)
	defer cancel()
	if n, _, err := admin.KeyCount(ctx, snap.Endpoint, snap.Revision); err == nil {
		md[MetaKeyCount] = strconv.FormatInt(n, 10)
	}
}

// RecordedFacts reads what SaveSnapshot recorded with an object: its revision and key
// count (hasCount false for objects stored without one, e.g. by CoreOS's operator or an
// older version of this one).
func RecordedFacts(md map[string]string) (revision, keyCount int64, hasCount bool) {
	revision, _ = strconv.ParseInt(md[MetaRevision], 10, 64)
	keyCount, err := strconv.ParseInt(md[MetaKeyCount], 10, 64)
	return revision, keyCount, err == nil
}
