package etcdadmin

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// A member's own client is dialled once and reused by every probe of it, and closed
// when the endpoint is no longer configured or the Admin closes.
func TestOneClientKeptUntilItsEndpointLeaves(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	ep := c.Endpoints()[0]
	a, m := meteredAdmin(t, c.Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st := a.Status(ctx); st[0].Err != nil {
		t.Fatal(st[0].Err)
	}
	first := a.ones[ep]
	if first == nil {
		t.Fatal("no client kept for the member after a status probe")
	}
	if h := a.Health(ctx); !h[0].Healthy {
		t.Fatal(h[0].Err)
	}
	if l := a.MemberLists(ctx); l[0].Err != nil {
		t.Fatal(l[0].Err)
	}
	if a.ones[ep] != first || len(a.ones) != 1 {
		t.Fatalf("probes dialled again: %d clients, same %v", len(a.ones), a.ones[ep] == first)
	}
	conns := testutil.ToFloat64(m.conns)
	if conns < 1 {
		t.Fatalf("%v connections counted after the first probes, want at least 1", conns)
	}
	if st := a.Status(ctx); st[0].Err != nil {
		t.Fatal(st[0].Err)
	}
	if l := a.MemberLists(ctx); l[0].Err != nil {
		t.Fatal(l[0].Err)
	}
	if again := testutil.ToFloat64(m.conns); again != conns {
		t.Fatalf("probing again opened %v connections, want none", again-conns)
	}

	a.SetEndpoints(ep) // unchanged: kept
	if a.ones[ep] != first {
		t.Fatal("an unchanged endpoint list dropped the member's client")
	}
	a.SetEndpoints("http://127.0.0.1:1")
	if len(a.ones) != 0 || first.client.Ctx().Err() == nil {
		t.Fatalf("endpoint left: %d clients kept, the old one open: %v", len(a.ones), first.client.Ctx().Err() == nil)
	}
	a.SetEndpoints(ep)
	if st := a.Status(ctx); st[0].Err != nil {
		t.Fatal(st[0].Err)
	}
	second := a.ones[ep]
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if second.client.Ctx().Err() == nil {
		t.Fatal("Close left a member's client open")
	}
	if _, err := a.dialOne(ep); err == nil {
		t.Fatal("a closed Admin dialled")
	}
}
