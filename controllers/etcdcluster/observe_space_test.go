package etcdcluster

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// Without a quorum nothing is known of alarms; with one and no status that may report
// an alarm, none are known without asking the list (a nil admin must not be used). The
// sizes come from whoever answered, the largest of each.
func TestAskSpaceFromStatuses(t *testing.T) {
	sts := []etcdadmin.EndpointStatus{
		{DBSize: 5 << 20, DBSizeInUse: 1 << 20, DBSizeQuota: 2 << 30},
		{DBSize: 3 << 20, DBSizeInUse: 2 << 20, DBSizeQuota: 4 << 30, Errors: []string{"etcdserver: no leader"}},
		{Err: errors.New("refused")},
	}
	want := spaceObservation{sizesKnown: true, dbSize: 5 << 20, dbInUse: 2 << 20, quota: 4 << 30}
	for _, quorum := range []bool{false, true} {
		s := askSpace(context.Background(), nil, sts, quorum)
		if s.alarmsKnown != quorum || len(s.alarms) != 0 || s.sizesKnown != want.sizesKnown || s.dbSize != want.dbSize || s.dbInUse != want.dbInUse || s.quota != want.quota {
			t.Fatalf("quorum %v: space = %+v, want %+v with alarms known (none) only with a quorum", quorum, s, want)
		}
	}
	if s := askSpace(context.Background(), nil, []etcdadmin.EndpointStatus{{Err: errors.New("x")}}, true); s.sizesKnown || s.alarmsKnown {
		t.Fatalf("no status answered, yet known: %+v", s)
	}
}

// TestNearQuota: a cluster is watched closely from nearQuotaShare of the quota a member
// reported, else of the configured one; nothing is judged without sizes.
func TestNearQuota(t *testing.T) {
	const mib = 1 << 20
	c := &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Pod: &etcdv1beta2.PodPolicy{
		EtcdEnv: []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "100000000"}}}}}
	for _, tc := range []struct {
		name string
		s    spaceObservation
		want bool
	}{
		{"no member answered", spaceObservation{dbSize: 99 * mib, quota: 100 * mib}, false},
		{"far from the reported quota", spaceObservation{sizesKnown: true, dbSize: 79 * mib, quota: 100 * mib}, false},
		{"at the line of the reported quota", spaceObservation{sizesKnown: true, dbSize: 80 * mib, quota: 100 * mib}, true},
		{"over the reported quota", spaceObservation{sizesKnown: true, dbSize: 101 * mib, quota: 100 * mib}, true},
		{"configured quota, far", spaceObservation{sizesKnown: true, dbSize: 79_000_000}, false},
		{"configured quota, near", spaceObservation{sizesKnown: true, dbSize: 80_000_000}, true},
	} {
		if got := tc.s.nearQuota(c); got != tc.want {
			t.Errorf("%s: nearQuota = %v, want %v", tc.name, got, tc.want)
		}
	}
}
