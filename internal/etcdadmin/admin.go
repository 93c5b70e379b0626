// Package etcdadmin is the operator's only way to change an etcd cluster's
// membership and to ask a cluster about itself. It wraps
// go.etcd.io/etcd/client/v3 with:
//
//   - per-request timeouts, so one dead member never stalls a reconcile;
//   - bounded, jittered retries of the errors etcd is known to return while
//     it is merely busy (an election, "unhealthy cluster" right after start or
//     while a dead member is listed, a learner still catching up);
//   - sentinel errors (ErrMemberNotFound, ErrLearnerNotReady, ...) for errors.Is;
//   - idempotent variants (EnsureLearner, EnsurePromoted, EnsureRemoved) for a
//     controller that may crash between sending a change and recording it;
//   - per-endpoint operations (Status, Health, MoveLeader to the leader's
//     endpoint, Snapshot from a chosen member) that the balanced client of
//     clientv3 cannot target by itself;
//   - errors that say why an endpoint is unreachable (connection refused, TLS
//     rejected, no answer) where clientv3 only says "deadline exceeded";
//   - optional Prometheus metrics (NewMetrics) and logr logs;
//   - the client TLS config from a client TLS Secret's keys, read from the API
//     or from a mounted directory (ClientTLSFromSecret, ClientTLSFromDir).
//
// Members are always identified by ID: a learner that has not started yet has
// no name.
package etcdadmin

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Config says how to reach a cluster. Zero durations take the defaults.
type Config struct {
	// Endpoints are client URLs (http://host:2379, https://host:2379) or
	// host:port. Per-endpoint operations (Status, Health, leader discovery)
	// use exactly this list; see SetEndpoints.
	Endpoints []string
	// TLS is used for every endpoint when set (client certificates and CA).
	TLS *tls.Config
	// Username and Password, when set, authenticate every request (etcd's user auth). A
	// cluster with auth still off ignores them, so a client may carry them before auth is
	// enabled. The password is never logged nor put in an error.
	Username, Password string
	// DialTimeout bounds establishing a connection (default 3s).
	DialTimeout time.Duration
	// CallTimeout bounds one request of a membership change (default 5s).
	CallTimeout time.Duration
	// ProbeTimeout bounds one Status, Health or version probe of one endpoint
	// (default 2s). It is short so that a dead member is noticed quickly.
	ProbeTimeout time.Duration
	// Retry bounds the retries of transient errors.
	Retry Backoff
	// Log receives structured logs: V(0) for changes made, V(1) for retries.
	Log logr.Logger
	// Metrics, if set, counts requests, retries and durations (NewMetrics).
	Metrics *Metrics
	// ClientLog is handed to clientv3; nil silences it (it would log every
	// retry of its own interceptor as a warning).
	ClientLog *zap.Logger
}

// Backoff bounds the retries of one operation: waits grow from Initial by
// doubling up to Max, with ±20% jitter, until Budget has elapsed (or the
// caller's context ends, whichever comes first).
type Backoff struct {
	Initial time.Duration // default 200ms
	Max     time.Duration // default 2s
	Budget  time.Duration // default 30s; a learner needs ~10 s to become promotable
}

// Defaults.
const (
	DefaultDialTimeout  = 3 * time.Second
	DefaultCallTimeout  = 5 * time.Second
	DefaultProbeTimeout = 2 * time.Second
)

// DefaultBackoff is used for zero fields of Config.Retry.
var DefaultBackoff = Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second, Budget: 30 * time.Second}

// Admin administers one etcd cluster. It is safe for concurrent use.
type Admin struct {
	cfg    Config
	log    logr.Logger
	client *clientv3.Client

	mu        sync.Mutex
	endpoints []string
	// ones are the clients bound to one endpoint each (dialOne), kept while the endpoint
	// is configured, so that an Admin that lives across reconciles probes its members on
	// open connections instead of dialling each of them again every time.
	ones   map[string]*oneClient
	closed bool
	// authPending: credentials were configured but no member answered the authentication
	// when the client was made, so it runs without them (AuthPending).
	authPending bool
	// tok is the root user's token for the per-endpoint clients (auth.go).
	tok tokenCache

	http *http.Client // for /version
}

// New creates an Admin. It does not contact the cluster: connections are made
// lazily, so New succeeds while the cluster is still starting.
func New(cfg Config) (*Admin, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcdadmin: at least one endpoint is required")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.Retry.Initial <= 0 {
		cfg.Retry.Initial = DefaultBackoff.Initial
	}
	if cfg.Retry.Max <= 0 {
		cfg.Retry.Max = DefaultBackoff.Max
	}
	if cfg.Retry.Budget <= 0 {
		cfg.Retry.Budget = DefaultBackoff.Budget
	}
	if cfg.Log.GetSink() == nil {
		cfg.Log = logr.Discard()
	}
	if cfg.ClientLog == nil {
		cfg.ClientLog = zap.NewNop()
	}
	eps := slices.Clone(cfg.Endpoints)
	c, authPending, err := newClient(cfg, eps)
	if err != nil {
		return nil, fmt.Errorf("etcdadmin: creating client for %v: %w", eps, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS.Clone()
	}
	tr.ResponseHeaderTimeout = cfg.ProbeTimeout
	tr.MaxResponseHeaderBytes = 64 << 10
	return &Admin{cfg: cfg, log: cfg.Log, client: c, endpoints: eps, authPending: authPending, http: &http.Client{
		Transport: cfg.Metrics.transport(tr),
		// A member is whatever image the tenant chose: its answer is read, never
		// followed elsewhere (a redirect would make the operator probe any address).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// MaxRecvMsgSize bounds every gRPC reply the operator accepts from a member (the
// member runs the tenant's image): a member list, status or alarm list is a few KiB, a
// snapshot stream's message at most ~4 MiB. clientv3's default (2 GiB) would let a
// member make the operator allocate whatever it sends.
const MaxRecvMsgSize = 8 << 20

func clientConfig(cfg Config, eps []string) clientv3.Config {
	return clientv3.Config{
		Endpoints:   eps,
		TLS:         cfg.TLS,
		Username:    cfg.Username,
		Password:    cfg.Password,
		DialTimeout: cfg.DialTimeout,
		// Keepalive notices a silently dead connection (a partitioned member).
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               cfg.ClientLog,
		DialOptions:          append(cfg.Metrics.dialOptions(), grpc.WithConnectParams(reconnect)),
		MaxCallRecvMsgSize:   MaxRecvMsgSize,
	}
}

// reconnect is how the clients redial a member they lost or never reached. gRPC's
// default waits up to 120 s between attempts, growing 1.6-fold from 1 s, and an Admin's
// clients live across reconciles: a member dialled while its pod started, or down for
// half a minute, was redialled only many seconds after it served again, and the operator
// saw it unreachable all that while (TestOneClientRedialsAMemberThatCameBack: after 30 s
// down, not within 5.4 s with the default; 13 ms–1.5 s with this). At most 2 s between
// attempts (the active resync) costs an attempt per 2 s to a member that is really gone.
// Each attempt keeps gRPC's default 20 s to connect.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	MinConnectTimeout: 20 * time.Second,
}

// Close releases the connections.
func (a *Admin) Close() error {
	a.http.CloseIdleConnections()
	a.mu.Lock()
	ones := a.ones
	a.ones, a.closed = nil, true
	a.mu.Unlock()
	for _, o := range ones {
		_ = o.client.Close()
	}
	return a.client.Close()
}

// Endpoints returns the current endpoint list.
func (a *Admin) Endpoints() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.endpoints)
}

// SetEndpoints replaces the endpoint list, e.g. after a member was added or
// removed. In-flight requests are not affected.
func (a *Admin) SetEndpoints(eps ...string) {
	if len(eps) == 0 {
		return
	}
	a.mu.Lock()
	if slices.Equal(a.endpoints, eps) {
		a.mu.Unlock()
		return
	}
	a.endpoints = slices.Clone(eps)
	// A client of an endpoint no longer configured (a member removed, a pod that got a
	// new address) would only keep redialling it.
	var gone []*oneClient
	for ep, o := range a.ones {
		if !slices.Contains(eps, ep) {
			gone = append(gone, o)
			delete(a.ones, ep)
		}
	}
	a.mu.Unlock()
	for _, o := range gone {
		_ = o.client.Close()
	}
	a.client.SetEndpoints(eps...)
}

// Client exposes the underlying balanced client for reads and writes of keys
// (e.g. by tests); membership must go through Admin.
func (a *Admin) Client() *clientv3.Client { return a.client }

// oneClient is a client bound to one endpoint, with a Maintenance API on its own
// connection (clientv3's Maintenance dials a new connection for every per-endpoint call).
type oneClient struct {
	client      *clientv3.Client
	maintenance clientv3.Maintenance
	// answered: the endpoint has answered a status probe on this client (Answered).
	answered atomic.Bool
}

// dialOne returns the client bound to exactly one endpoint, for requests that must reach
// a particular member (the leader, the member whose status or health is checked). It is
// dialled on first use and kept until the endpoint is no longer configured (SetEndpoints)
// or the Admin is closed: callers must not close it.
func (a *Admin) dialOne(ep string) (*oneClient, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, &Error{Op: "dial", Target: ep, Kind: ErrUnavailable, Err: errors.New("etcdadmin: closed"), Attempts: 1}
	}
	if o, ok := a.ones[ep]; ok {
		return o, nil
	}
	// Without the user and password: a learner refuses to authenticate anyone, and
	// clientv3 would authenticate with the endpoint itself. The Admin's token, which every
	// member knows, goes with each request instead (auth.go).
	cc := clientConfig(a.cfg, []string{ep})
	cc.Username, cc.Password = "", ""
	if a.cfg.Username != "" {
		cc.DialOptions = append(slices.Clone(cc.DialOptions), grpc.WithPerRPCCredentials(tokenCredentials{a}))
	}
	c, err := clientv3.New(cc)
	if err != nil {
		return nil, &Error{Op: "dial", Target: ep, Kind: ErrUnavailable, Err: err, Attempts: 1}
	}
	o := &oneClient{client: c, maintenance: clientv3.NewMaintenanceFromMaintenanceClient(pb.NewMaintenanceClient(c.ActiveConnection()), c)}
	if a.ones == nil {
		a.ones = map[string]*oneClient{}
	}
	a.ones[ep] = o
	return o, nil
}

// FormatID renders a member ID the way etcd prints it (hex).
func FormatID(id uint64) string { return strconv.FormatUint(id, 16) }

// ParseID parses a member ID printed by FormatID or etcdctl.
func ParseID(s string) (uint64, error) { return strconv.ParseUint(s, 16, 64) }

// retry runs f until it succeeds, fails permanently, the retry budget is
// spent or ctx ends. Each attempt gets its own timeout. The returned error is
// always an *Error.
func retry[T any](ctx context.Context, a *Admin, op, target string, timeout time.Duration,
	f func(ctx context.Context) (T, error)) (T, error) {
	start := time.Now()
	wait := a.cfg.Retry.Initial
	var zero T
	var err error
	defer func() { a.cfg.Metrics.observe(op, start, err) }()
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, timeout)
		var v T
		v, err = f(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				a.log.V(1).Info("etcd request succeeded after retries", "op", op, "target", target, "attempts", attempt)
			}
			return v, nil
		}
		// f may already return an *Error (from a nested helper): keep its kind.
		var kindErr error
		var transient bool
		var inner *Error
		cause := err
		if errors.As(err, &inner) {
			kindErr, transient = inner.Kind, IsTransient(inner.Kind)
			cause = inner.Err
			if cause == nil {
				cause = cmp.Or(kindErr, error(inner))
			}
		} else {
			kindErr, transient = classify(ctx, err)
		}
		e := &Error{Op: op, Target: target, Kind: kindErr, Err: cause, Attempts: attempt, Elapsed: time.Since(start)}
		err = e
		if !transient || !retryWanted(ctx, kindErr) {
			e.ctxErr = ctx.Err()
			return zero, e
		}
		// Jitter spreads the retries of several reconcilers apart.
		sleep := time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
		if time.Since(start)+sleep > a.cfg.Retry.Budget {
			// Giving up: say why the endpoints could not be reached.
			if kindErr == ErrUnavailable {
				e.Err = a.withDiagnosis(context.WithoutCancel(ctx), e.Err, a.Endpoints()...)
			}
			return zero, e
		}
		a.log.V(1).Info("transient etcd error, retrying", "op", op, "target", target, "attempt", attempt, "backoff", sleep, "error", cause.Error())
		a.cfg.Metrics.retried(op, kindErr)
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			e.ctxErr = ctx.Err()
			e.Elapsed = time.Since(start)
			return zero, e
		case <-t.C:
		}
		wait = min(2*wait, a.cfg.Retry.Max)
	}
}
