package kubelet

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestProbeLoopThresholds drives probeLoop with a scripted check and records the
// reported transitions.
func TestProbeLoopThresholds(t *testing.T) {
	script := []bool{false, true, true, false, false, true, false, false, false, true}
	var i atomic.Int32
	check := func(context.Context) error {
		n := int(i.Add(1)) - 1
		if n >= len(script) {
			return nil
		}
		if script[n] {
			return nil
		}
		return errors.New("fail")
	}
	var mu sync.Mutex
	var reports []bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		probeLoop(ctx, probeParams{period: time.Millisecond, timeout: time.Second, failureThreshold: 3, successThreshold: 2},
			check, func(ok bool, _ error) bool {
				mu.Lock()
				defer mu.Unlock()
				reports = append(reports, ok)
				return len(reports) < 3
			})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("probe loop did not end")
	}
	// f t t(->true) f f t f f f(->false) t t(->true, third report ends the loop)
	want := []bool{true, false, true}
	if len(reports) != 3 || reports[0] != want[0] || reports[1] != want[1] || reports[2] != want[2] {
		t.Fatalf("reports %v, want %v", reports, want)
	}
	if got := i.Load(); got != 11 {
		t.Fatalf("checks run %d, want 11", got)
	}
}

func TestProbeDefaults(t *testing.T) {
	pp := paramsOf(&v1.Probe{})
	if pp.period != 10*time.Second || pp.timeout != time.Second || pp.failureThreshold != 3 || pp.successThreshold != 1 || pp.initialDelay != 0 {
		t.Fatalf("defaults %+v", pp)
	}
	pp = paramsOf(&v1.Probe{InitialDelaySeconds: 2, PeriodSeconds: 1, TimeoutSeconds: 3, FailureThreshold: 5, SuccessThreshold: 2})
	if pp.period != time.Second || pp.timeout != 3*time.Second || pp.failureThreshold != 5 || pp.successThreshold != 2 || pp.initialDelay != 2*time.Second {
		t.Fatalf("explicit %+v", pp)
	}
}

func TestHTTPAndTCPCheckers(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" || r.Header.Get("X-Probe") != "yes" {
			w.WriteHeader(400)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	host, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "client", ContainerPort: int32(port)}}}
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
		Path: "/health", Port: intstr.FromString("client"),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}},
	}}}
	check, err := probeChecker(probe, c, host, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := check(ctx); err != nil {
		t.Fatalf("200: %v", err)
	}
	status.Store(302)
	if err := check(ctx); err != nil {
		t.Fatalf("redirect must count as success: %v", err)
	}
	status.Store(503)
	if err := check(ctx); err == nil {
		t.Fatal("503 counted as success")
	}

	tcp := &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}
	check, err = probeChecker(tcp, c, host, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := check(ctx); err != nil {
		t.Fatalf("tcp: %v", err)
	}
	srv.Close()
	if err := check(ctx); err == nil {
		t.Fatal("tcp probe to a closed port succeeded")
	}
	if _, err := probeChecker(&v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("nope")}}}, c, host, nil); err == nil {
		t.Fatal("unknown named port accepted")
	}
}
