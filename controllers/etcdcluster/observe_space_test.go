package etcdcluster

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// The sizes come from whoever answered, the largest of each; the alarms are known only
// when the alarm list was answered (without a quorum it is not).
func TestSpaceFrom(t *testing.T) {
	sts := []etcdadmin.EndpointStatus{
		{DBSize: 5 << 20, DBSizeInUse: 1 << 20, DBSizeQuota: 2 << 30},
		{DBSize: 3 << 20, DBSizeInUse: 2 << 20, DBSizeQuota: 4 << 30},
		{Err: errors.New("refused")},
	}
	s := spaceFrom(sts, alarmAnswer{})
	want := spaceObservation{sizesKnown: true, dbSize: 5 << 20, dbInUse: 2 << 20, quota: 4 << 30}
	if s.alarmsKnown || s.sizesKnown != want.sizesKnown || s.dbSize != want.dbSize || s.dbInUse != want.dbInUse || s.quota != want.quota {
		t.Fatalf("space = %+v, want %+v", s, want)
	}
	if s := spaceFrom([]etcdadmin.EndpointStatus{{Err: errors.New("x")}}, alarmAnswer{known: true}); s.sizesKnown || !s.alarmsKnown {
		t.Fatalf("no status answered but the alarm list did: %+v", s)
	}
	noSpace := []etcdadmin.Alarm{{MemberID: 7, Type: etcdadmin.AlarmNoSpace}}
	if s := spaceFrom(sts, alarmAnswer{known: true, alarms: noSpace}); !s.alarmsKnown || len(s.alarms) != 1 || s.alarms[0] != noSpace[0] {
		t.Fatalf("alarm list answered: %+v", s)
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
