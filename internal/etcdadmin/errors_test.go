package etcdadmin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	bg := context.Background()
	canceled, cancel := context.WithCancel(bg)
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		err       error
		want      error
		transient bool
	}{
		// As the wire delivers them (gRPC status) and as clientv3 converts them.
		{"unhealthy grpc", bg, rpctypes.ErrGRPCUnhealthy, ErrUnhealthyCluster, true},
		{"unhealthy client", bg, clientv3.ContextError(bg, rpctypes.ErrGRPCUnhealthy), ErrUnhealthyCluster, true},
		{"leader changed", bg, rpctypes.ErrLeaderChanged, ErrLeaderChanged, true},
		{"no leader", bg, rpctypes.ErrGRPCNoLeader, ErrNoLeader, true},
		{"not leader", bg, rpctypes.ErrGRPCNotLeader, ErrNotLeader, true},
		{"learner not ready", bg, rpctypes.ErrGRPCLearnerNotReady, ErrLearnerNotReady, true},
		{"request timed out", bg, rpctypes.ErrGRPCTimeout, ErrServerTimeout, true},
		{"timed out leader fail", bg, rpctypes.ErrGRPCTimeoutDueToLeaderFail, ErrServerTimeout, true},
		{"leader transfer timeout", bg, status.Error(codes.Unknown, "etcdserver: request timed out, leader transfer took too long"), ErrServerTimeout, true},
		{"removed member stopping", bg, status.Error(codes.Unknown, "raft: stopped"), ErrUnavailable, true},
		{"not enough started", bg, rpctypes.ErrGRPCMemberNotEnoughStarted, ErrNotEnoughStarted, true},
		{"asked a learner (etcd 3.5's MemberPromote)", bg, rpctypes.ErrGRPCNotSupportedForLearner, ErrEndpointIsLearner, true},
		{"member not found", bg, rpctypes.ErrGRPCMemberNotFound, ErrMemberNotFound, false},
		{"peer url exists", bg, rpctypes.ErrPeerURLExist, ErrPeerURLExists, false},
		{"not learner", bg, rpctypes.ErrGRPCMemberNotLearner, ErrMemberNotLearner, false},
		{"too many learners", bg, rpctypes.ErrGRPCTooManyLearners, ErrTooManyLearners, false},
		{"bad urls", bg, rpctypes.ErrGRPCMemberBadURLs, ErrInvalidPeerURL, false},
		{"bad transferee", bg, rpctypes.ErrGRPCBadLeaderTransferee, ErrBadTransferee, false},
		{"conn reset", bg, status.Error(codes.Unavailable, "error reading from server: read tcp: connection reset by peer"), ErrUnavailable, true},
		{"attempt deadline", bg, context.DeadlineExceeded, ErrUnavailable, true},
		{"dial refused", bg, fmt.Errorf("dial tcp 127.0.0.1:2379: connect: connection refused"), ErrUnavailable, true},
		{"caller canceled", canceled, status.Error(codes.Canceled, "context canceled"), nil, false},
		{"caller canceled unavailable", canceled, status.Error(codes.Unavailable, "x"), nil, false},
		{"unknown", bg, errors.New("boom"), nil, false},
		{"permission denied", bg, rpctypes.ErrGRPCPermissionDenied, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, transient := classify(tc.ctx, tc.err)
			if got != tc.want || transient != tc.transient {
				t.Fatalf("classify(%v) = %v, %v; want %v, %v", tc.err, got, transient, tc.want, tc.transient)
			}
		})
	}
}

func TestErrorWrapping(t *testing.T) {
	cause := rpctypes.ErrGRPCUnhealthy
	e := &Error{Op: "MemberAddAsLearner", Target: "http://127.0.0.1:2380", Kind: ErrUnhealthyCluster, Err: cause,
		Attempts: 7, Elapsed: 30 * time.Second, ctxErr: context.DeadlineExceeded}
	for _, target := range []error{ErrUnhealthyCluster, cause, context.DeadlineExceeded} {
		if !errors.Is(e, target) {
			t.Errorf("errors.Is(e, %v) = false", target)
		}
	}
	if errors.Is(e, ErrMemberNotFound) {
		t.Error("errors.Is matched an unrelated sentinel")
	}
	if !IsTransient(e) {
		t.Error("unhealthy cluster must be transient")
	}
	msg := e.Error()
	for _, want := range []string{"MemberAddAsLearner", "http://127.0.0.1:2380", "unhealthy", "7 attempts", "30s", "etcdserver: unhealthy cluster"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if IsTransient(&Error{Op: "MemberRemove", Kind: ErrMemberNotFound}) {
		t.Error("member not found must not be transient")
	}
}

func TestValidatePeerURLs(t *testing.T) {
	for _, ok := range [][]string{{"http://127.0.0.1:2380"}, {"https://m1.c.default.svc:2380", "http://[::1]:2380"}} {
		if err := validatePeerURLs(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range [][]string{nil, {"127.0.0.1:2380"}, {"http://127.0.0.1"}, {"unix://x:1"}, {"http://h:2380/path"}} {
		if err := validatePeerURLs(bad); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

func testAdmin(budget time.Duration) *Admin {
	return &Admin{cfg: Config{Retry: Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Budget: budget}}}
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	t.Run("transient then success", func(t *testing.T) {
		a := testAdmin(time.Second)
		calls := 0
		v, err := retry(ctx, a, "op", "", time.Second, func(context.Context) (int, error) {
			if calls++; calls < 3 {
				return 0, rpctypes.ErrGRPCLeaderChanged
			}
			return 42, nil
		})
		if err != nil || v != 42 || calls != 3 {
			t.Fatalf("v=%d err=%v calls=%d", v, err, calls)
		}
	})
	t.Run("permanent returns at once", func(t *testing.T) {
		a := testAdmin(time.Second)
		calls := 0
		_, err := retry(ctx, a, "op", "x", time.Second, func(context.Context) (int, error) {
			calls++
			return 0, rpctypes.ErrGRPCMemberNotFound
		})
		var e *Error
		if calls != 1 || !errors.Is(err, ErrMemberNotFound) || !errors.As(err, &e) || e.Attempts != 1 {
			t.Fatalf("calls=%d err=%v", calls, err)
		}
	})
	t.Run("budget bounds retries", func(t *testing.T) {
		a := testAdmin(50 * time.Millisecond)
		start := time.Now()
		calls := 0
		_, err := retry(ctx, a, "op", "", time.Second, func(context.Context) (int, error) {
			calls++
			return 0, rpctypes.ErrGRPCUnhealthy
		})
		if !errors.Is(err, ErrUnhealthyCluster) || calls < 3 || time.Since(start) > time.Second {
			t.Fatalf("err=%v calls=%d took=%v", err, calls, time.Since(start))
		}
	})
	t.Run("per-attempt timeout is transient", func(t *testing.T) {
		a := testAdmin(time.Second)
		calls := 0
		_, err := retry(ctx, a, "op", "", 10*time.Millisecond, func(actx context.Context) (int, error) {
			if calls++; calls == 1 {
				<-actx.Done()
				return 0, actx.Err()
			}
			return 1, nil
		})
		if err != nil || calls != 2 {
			t.Fatalf("err=%v calls=%d", err, calls)
		}
	})
	t.Run("caller cancel stops", func(t *testing.T) {
		a := testAdmin(10 * time.Hour)
		a.cfg.Retry.Initial, a.cfg.Retry.Max = time.Hour, time.Hour
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := retry(cctx, a, "op", "", time.Second, func(context.Context) (int, error) {
			return 0, rpctypes.ErrGRPCLearnerNotReady
		})
		if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrLearnerNotReady) {
			t.Fatalf("err=%v", err)
		}
	})
}

func TestMostRecent(t *testing.T) {
	down := errors.New("down")
	for _, tc := range []struct {
		name string
		sts  []EndpointStatus
		want int
	}{
		{"none", nil, -1},
		{"all down", []EndpointStatus{{Err: down}, {Err: down}}, -1},
		{"highest revision", []EndpointStatus{{MemberID: 1, Leader: 1, Revision: 5}, {MemberID: 2, Leader: 1, Revision: 9}, {MemberID: 3, Leader: 1, Revision: 7}}, 1},
		{"skip failed even if listed first", []EndpointStatus{{Err: down, Revision: 100}, {MemberID: 2, Revision: 3}}, 1},
		{"tie prefers follower", []EndpointStatus{{MemberID: 1, Leader: 1, Revision: 9}, {MemberID: 2, Leader: 1, Revision: 9}}, 1},
		{"tie keeps first follower", []EndpointStatus{{MemberID: 2, Leader: 1, Revision: 9}, {MemberID: 1, Leader: 1, Revision: 9}}, 0},
		{"leader wins when ahead", []EndpointStatus{{MemberID: 1, Leader: 1, Revision: 10}, {MemberID: 2, Leader: 1, Revision: 9}}, 0},
	} {
		if got := mostRecent(tc.sts); got != tc.want {
			t.Errorf("%s: mostRecent = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestRetryNestedErrorWithoutCause(t *testing.T) {
	a := testAdmin(20 * time.Millisecond)
	_, err := retry(context.Background(), a, "op", "", time.Second, func(context.Context) (int, error) {
		return 0, &Error{Op: "Leader", Kind: ErrNoLeader}
	})
	if !errors.Is(err, ErrNoLeader) {
		t.Fatalf("err = %v", err)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := testAdmin(time.Second)
	a.cfg.Metrics = m
	calls := 0
	_, _ = retry(context.Background(), a, "MemberPromote", "", time.Second, func(context.Context) (int, error) {
		if calls++; calls < 3 {
			return 0, rpctypes.ErrGRPCLearnerNotReady
		}
		return 1, nil
	})
	_, _ = retry(context.Background(), a, "MemberRemove", "", time.Second, func(context.Context) (int, error) {
		return 0, rpctypes.ErrGRPCMemberNotFound
	})
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(m.retries.WithLabelValues("MemberPromote", "learner_not_ready")), 2, "retries"},
		{testutil.ToFloat64(m.requests.WithLabelValues("MemberPromote", "ok")), 1, "promote ok"},
		{testutil.ToFloat64(m.requests.WithLabelValues("MemberRemove", "permanent")), 1, "remove permanent"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("registering twice must fail")
	}
}
