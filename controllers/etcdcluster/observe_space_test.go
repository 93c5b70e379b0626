package etcdcluster

import (
	"context"
	"errors"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// Without a quorum the alarm list is not asked for (it would only time out) and nothing
// is known of alarms; the sizes come from whoever answered, the largest of each.
func TestAskSpaceWithoutQuorum(t *testing.T) {
	sts := []etcdadmin.EndpointStatus{
		{DBSize: 5 << 20, DBSizeInUse: 1 << 20, DBSizeQuota: 2 << 30},
		{DBSize: 3 << 20, DBSizeInUse: 2 << 20, DBSizeQuota: 4 << 30},
		{Err: errors.New("refused")},
	}
	s := askSpace(context.Background(), nil, sts, false) // a nil admin: must not be used
	want := spaceObservation{sizesKnown: true, dbSize: 5 << 20, dbInUse: 2 << 20, quota: 4 << 30}
	if s.alarmsKnown || s.sizesKnown != want.sizesKnown || s.dbSize != want.dbSize || s.dbInUse != want.dbInUse || s.quota != want.quota {
		t.Fatalf("space = %+v, want %+v", s, want)
	}
	if s := askSpace(context.Background(), nil, []etcdadmin.EndpointStatus{{Err: errors.New("x")}}, false); s.sizesKnown {
		t.Fatalf("no answer, yet sizes known: %+v", s)
	}
}
