//go:build integration

package etcdcluster

import (
	"errors"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// Without quorum every endpoint whose probe failed under the short bound is asked again
// with the full one, and only those: a member that failed its full probe is not asked
// twice.
func TestReaskCutShortOnRealEtcd(t *testing.T) {
	ec := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	served := ec.Endpoints()[0]
	admin, ctx := testAdmin(t, etcdadmin.Config{Endpoints: []string{served}}) // observe_etcd_etcd_test.go

	cut := errors.New("probe cut short")
	statuses := []etcdadmin.EndpointStatus{{Endpoint: served, Err: cut}, {Endpoint: "http://127.0.0.1:1", Err: cut}}
	short := func(ep string) time.Duration {
		if ep == served {
			return startingProbeTimeout
		}
		return 0 // probed with the full bound already
	}
	answeredNow := reaskCutShort(ctx, admin, statuses, short)
	if len(answeredNow) != 1 || answeredNow[0] != served {
		t.Fatalf("answered when asked again: %v, want only %s", answeredNow, served)
	}
	if statuses[0].Err != nil || statuses[0].MemberID == 0 {
		t.Fatalf("the member cut short was not asked again with the full bound: %+v", statuses[0])
	}
	if !errors.Is(statuses[1].Err, cut) {
		t.Fatalf("a member probed with the full bound was asked again: %+v", statuses[1])
	}

	statuses = []etcdadmin.EndpointStatus{{Endpoint: served, Err: cut}}
	reaskCutShort(ctx, admin, statuses, nil)
	if !errors.Is(statuses[0].Err, cut) {
		t.Fatal("without bounds (every probe full) an endpoint was asked again")
	}
}
