package etcdadmin

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// Every call on the wire is counted by method, including the per-endpoint probes that
// dial a client of their own, and the HTTP /version probe.
func TestWireCallsCounted(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	a, m := meteredAdmin(t, c.Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.MemberList(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Status(ctx, c.Endpoints()...); st[0].Err != nil {
		t.Fatal(st[0].Err)
	}
	if _, err := a.Versions(ctx); err != nil {
		t.Fatal(err)
	}
	for method, atLeast := range map[string]float64{
		"/etcdserverpb.Cluster/MemberList": 1,
		"/etcdserverpb.Maintenance/Status": 1,
		"HTTP GET /version":                1,
	} {
		if got := testutil.ToFloat64(m.wire.WithLabelValues(method, "OK")); got < atLeast {
			t.Errorf("%s counted %v times, want at least %v", method, got, atLeast)
		}
	}
}

// meteredAdmin is an Admin of eps counting into metrics of its own, closed when the test
// ends.
func meteredAdmin(t *testing.T, eps []string) (*Admin, *Metrics) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Endpoints: eps, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, m
}
