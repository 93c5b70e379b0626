package etcdadmin

import (
	"context"
	"net"
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

// A probe bounded by StatusWithin ends at its own bound, not at ProbeTimeout: an
// endpoint that accepts connections and never answers (an etcd still starting has its
// listener open before it serves) fails the probe, and is not Answered; a serving member
// is, from its first answer on.
func TestStatusWithinBoundsEachProbe(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	served := c.Endpoints()[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and keeps every connection, answering nothing
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, conn)
		}
	}()
	silent := "http://" + ln.Addr().String()
	// A ProbeTimeout far beyond the test's own bound: only the shorter bound can end
	// the silent endpoint's probe in time.
	a, err := New(Config{Endpoints: []string{served, silent}, ProbeTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Answered(served) || a.Answered(silent) {
		t.Fatal("endpoints Answered before any probe")
	}
	within := func(ep string) time.Duration {
		if ep == silent {
			return 200 * time.Millisecond
		}
		return 0 // ProbeTimeout
	}
	done := make(chan []EndpointStatus, 1)
	go func() { done <- a.StatusWithin(context.Background(), within, served, silent) }()
	var st []EndpointStatus
	select {
	case st = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the silent endpoint's probe did not end at its own bound")
	}
	if st[0].Err != nil || st[0].MemberID == 0 {
		t.Fatalf("serving member: %+v", st[0])
	}
	if st[1].Err == nil {
		t.Fatalf("silent endpoint answered: %+v", st[1])
	}
	if !a.Answered(served) || a.Answered(silent) {
		t.Fatalf("Answered: serving member %v (want true), silent endpoint %v (want false)", a.Answered(served), a.Answered(silent))
	}
	a.SetEndpoints(silent) // the member leaves the list: what was known of it goes
	a.SetEndpoints(served, silent)
	if a.Answered(served) {
		t.Fatal("an endpoint that left the list and came back is still Answered")
	}
}

// A member's kept client reaches a member that comes back within the reconnect bound,
// not after gRPC's default back-off: probed every half second while down for 30 s, as
// the operator's observations probe a member, the client with gRPC's default did not
// reach the member within 5.4 s of its return; a member that serves again must answer
// within the longest wait (MaxDelay and its jitter) and a few seconds of slack.
func TestOneClientRedialsAMemberThatCameBack(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	m := c.Members[0]
	ep := c.Endpoints()[0]
	a, _ := meteredAdmin(t, []string{ep})
	probe := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return a.Status(ctx, ep)[0].Err
	}
	if err := probe(); err != nil {
		t.Fatal(err)
	}
	m.Stop(t)
	for down := time.Now(); time.Since(down) < 30*time.Second; {
		if probe() == nil {
			t.Fatal("a stopped member answered")
		}
		time.Sleep(500 * time.Millisecond) // the probes' pace, as the operator's resyncs
	}
	c.Restart(m) // returns once the member reports itself healthy
	back := time.Now()
	limit := time.Duration(float64(reconnect.Backoff.MaxDelay)*(1+reconnect.Backoff.Jitter)) + 3*time.Second
	for {
		err := probe()
		if err == nil {
			break
		}
		if time.Since(back) > limit {
			t.Fatalf("the member serves again but its client did not reach it within %v: %v", limit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the client reached the member %v after it was healthy again", time.Since(back).Round(time.Millisecond))
}
