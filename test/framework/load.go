package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// DefaultLoadPrefix is where a load writes unless LoadOptions.Prefix says otherwise.
const DefaultLoadPrefix = "load/"

// LoadOptions configure a write load.
type LoadOptions struct {
	// Rate is the number of puts started per second (default 50).
	Rate int
	// Prefix of every key written (default "load/").
	Prefix string
	// Endpoints returns the client URLs to use; it is called again every
	// EndpointRefresh so members that are replaced (new pod, new IP) are
	// followed, as a client with an up-to-date endpoint list would.
	Endpoints func() []string
	// EndpointRefresh is how often Endpoints is called (default 1 s).
	EndpointRefresh time.Duration
	// RetryBudget bounds how long one put is retried before it counts as
	// failed (default 15 s). Retrying the same key with the same value is
	// idempotent, so a retry after an unacknowledged success is harmless.
	RetryBudget time.Duration
	// AttemptTimeout bounds one attempt (default 2 s).
	AttemptTimeout time.Duration
	// TLS, if set, is the client's TLS configuration (endpoints are then https URLs).
	TLS *tls.Config
	// Username and Password, if set, are etcd credentials (ignored by etcd while its
	// auth is off, so a load may carry them before auth is turned on).
	Username, Password string
	// Workers is the number of concurrent writers (default 4×Rate, at most
	// 1000), so puts stuck in retries through a few seconds of election do not
	// stall the rate: ticks find no free worker only beyond that.
	Workers int
}

// Load writes keys at a steady rate until stopped, and remembers every write
// etcd acknowledged so Verify can check none was lost.
type Load struct {
	opts   LoadOptions
	cli    *clientv3.Client
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu       sync.Mutex
	acked    map[string]string // key → value acknowledged
	failed   []string          // keys whose put never succeeded
	maxLat   time.Duration     // worst acknowledged put, retries included
	lastEps  []string
	attempts atomic.Int64 // failed attempts (retried)
	started  atomic.Int64
	skipped  atomic.Int64 // ticks dropped because every worker was busy
	stopped  bool
	result   LoadResult
	start    time.Time
}

// LoadResult summarises a load run.
type LoadResult struct {
	Started      int64         // puts started
	Acked        int           // puts acknowledged
	Failed       int           // puts that never succeeded within the retry budget
	RetriedTries int64         // attempts that failed and were retried
	Skipped      int64         // ticks dropped because all workers were busy
	MaxLatency   time.Duration // worst acknowledged put, retries included
	Duration     time.Duration
}

func (r LoadResult) String() string {
	return fmt.Sprintf("started=%d acked=%d failed=%d retried-attempts=%d skipped=%d max-latency=%v over %v",
		r.Started, r.Acked, r.Failed, r.RetriedTries, r.Skipped, r.MaxLatency.Round(time.Millisecond), r.Duration.Round(time.Millisecond))
}

// StartLoad begins writing. Stop it with Stop (also done at cleanup).
func StartLoad(opts LoadOptions) (*Load, error) {
	if opts.Rate <= 0 {
		opts.Rate = 50
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultLoadPrefix
	}
	if opts.EndpointRefresh <= 0 {
		opts.EndpointRefresh = time.Second
	}
	if opts.RetryBudget <= 0 {
		opts.RetryBudget = 15 * time.Second
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = 2 * time.Second
	}
	if opts.Workers <= 0 {
		opts.Workers = min(4*opts.Rate, 1000)
	}
	eps := opts.Endpoints()
	if len(eps) == 0 {
		return nil, errors.New("load: no endpoints")
	}
	// Keepalives as a client of a real cluster needs them: a member whose node lost its
	// network keeps its TCP connections open (nothing answers, nothing resets), and
	// without pings the balancer keeps sending requests there. 5 s is the shortest
	// interval etcd's server accepts by default (--grpc-keepalive-min-time).
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: opts.TLS, Username: opts.Username, Password: opts.Password, DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: 2 * time.Second, PermitWithoutStream: true})
	if err != nil {
		return nil, fmt.Errorf("load: client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Load{opts: opts, cli: cli, cancel: cancel, acked: map[string]string{}, lastEps: sortedCopy(eps), start: time.Now()}

	seq := make(chan int)
	l.done.Add(2 + opts.Workers)
	go func() { defer l.done.Done(); l.refreshEndpoints(ctx) }()
	go func() {
		defer l.done.Done()
		defer close(seq)
		tick := time.NewTicker(time.Second / time.Duration(opts.Rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case seq <- i:
			default:
				l.skipped.Add(1)
			}
		}
	}()
	for w := 0; w < opts.Workers; w++ {
		go func() {
			defer l.done.Done()
			for i := range seq {
				l.put(i)
			}
		}()
	}
	return l, nil
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func (l *Load) refreshEndpoints(ctx context.Context) {
	t := time.NewTicker(l.opts.EndpointRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		eps := sortedCopy(l.opts.Endpoints())
		if len(eps) == 0 || slices.Equal(eps, l.lastEps) {
			continue
		}
		l.lastEps = eps
		l.cli.SetEndpoints(eps...)
	}
}

// put writes one key, retrying until acknowledged or the budget is spent. A
// put still retrying when the load is stopped finishes its retries: stopping
// must not turn a slow write into a "failed" one.
func (l *Load) put(i int) {
	l.started.Add(1)
	key := fmt.Sprintf("%s%08d", l.opts.Prefix, i)
	val := strconv.Itoa(i) + "@" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start := time.Now()
	deadline := start.Add(l.opts.RetryBudget)
	backoff := 50 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(context.Background(), l.opts.AttemptTimeout)
		_, err := l.cli.Put(actx, key, val)
		cancel()
		if err == nil {
			lat := time.Since(start)
			l.mu.Lock()
			l.acked[key] = val
			if lat > l.maxLat {
				l.maxLat = lat
			}
			l.mu.Unlock()
			return
		}
		if time.Now().Add(backoff).After(deadline) {
			l.mu.Lock()
			l.failed = append(l.failed, key)
			l.mu.Unlock()
			return
		}
		l.attempts.Add(1)
		time.Sleep(backoff)
		if backoff < 500*time.Millisecond {
			backoff *= 2
		}
	}
}

// Stop ends the load (puts in flight finish their retries) and returns the
// result. Safe to call more than once.
func (l *Load) Stop() LoadResult {
	l.mu.Lock()
	if l.stopped {
		defer l.mu.Unlock()
		return l.result
	}
	l.stopped = true
	l.mu.Unlock()
	l.cancel()
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.result = LoadResult{
		Started:      l.started.Load(),
		Acked:        len(l.acked),
		Failed:       len(l.failed),
		RetriedTries: l.attempts.Load(),
		Skipped:      l.skipped.Load(),
		MaxLatency:   l.maxLat,
		Duration:     time.Since(l.start),
	}
	return l.result
}

// WaitAcked waits until n more puts than now have been acknowledged, so a
// fault hits a load that is really flowing and its aftermath is written to.
func (l *Load) WaitAcked(n int, timeout time.Duration) error {
	target := l.Acked() + n
	deadline := time.Now().Add(timeout)
	for l.Acked() < target {
		if time.Now().After(deadline) {
			return fmt.Errorf("load: %d of %d more acknowledged writes after %v", l.Acked()-target+n, n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Acked returns how many puts have been acknowledged so far.
func (l *Load) Acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// Verify stops the load and reads back every acknowledged key with a
// linearizable range over the prefix: each must be present with the value
// that was acknowledged. It returns the result and an error naming the first
// lost or wrong keys.
func (l *Load) Verify(ctx context.Context) (LoadResult, error) {
	res := l.Stop()
	defer l.cli.Close()
	got := map[string]string{}
	// Paged, so a long run does not exceed the gRPC message limit.
	from := l.opts.Prefix
	end := clientv3.GetPrefixRangeEnd(l.opts.Prefix)
	for {
		var resp *clientv3.GetResponse
		var err error
		for attempt := 0; ; attempt++ {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err = l.cli.Get(actx, from, clientv3.WithRange(end), clientv3.WithLimit(5000))
			cancel()
			if err == nil || attempt >= 5 || ctx.Err() != nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			return res, fmt.Errorf("load: read back: %w", err)
		}
		for _, kv := range resp.Kvs {
			got[string(kv.Key)] = string(kv.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var lost []string
	for k, v := range l.acked {
		if got[k] != v {
			lost = append(lost, fmt.Sprintf("%s (want %q, got %q)", k, v, got[k]))
		}
	}
	if n := len(lost); n > 0 {
		sort.Strings(lost)
		if n > 5 {
			lost = append(lost[:5], fmt.Sprintf("... %d more", n-5))
		}
		return res, fmt.Errorf("load: %d of %d acknowledged writes lost or wrong: %v", n, len(l.acked), lost)
	}
	return res, nil
}

// AckedKeys are the writes acknowledged so far, key → value.
func (l *Load) AckedKeys() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.acked))
	for k, v := range l.acked {
		out[k] = v
	}
	return out
}

// StartLoadTLS is StartLoad over https with cfg, through the member pods' DNS names
// (which the server certificates name), under its own key prefix.
func (e *Env) StartLoadTLS(name string, rate int, cfg *tls.Config) *Load {
	e.t.Helper()
	l, err := StartLoad(LoadOptions{Rate: rate, TLS: cfg, Prefix: "load-tls/", Endpoints: func() []string { return e.MemberEndpointsTLS(name) }})
	if err != nil {
		e.t.Fatalf("start TLS load on %s: %v", name, err)
	}
	e.t.Cleanup(func() { l.Stop() })
	return l
}

// StartLoad writes rate puts/s to cluster name through the IPs of its member
// pods (followed as members are replaced) and stops at cleanup. Check the
// result with Verify.
func (e *Env) StartLoad(name string, rate int) *Load {
	e.t.Helper()
	l, err := StartLoad(LoadOptions{Rate: rate, Endpoints: func() []string { return e.memberEndpoints(name) }})
	if err != nil {
		e.t.Fatalf("start load on %s: %v", name, err)
	}
	e.t.Cleanup(func() { l.Stop() })
	return l
}

// memberEndpoints are the client URLs of the cluster's member pods that have
// an IP and are not being deleted. It never fails the test: it runs in the
// load's goroutines.
func (e *Env) memberEndpoints(name string) []string {
	var pods corev1.PodList
	if err := e.C.List(context.Background(), &pods, client.InNamespace("default"),
		client.MatchingLabelsSelector{Selector: render.ClusterSelector(name)}); err != nil {
		return nil
	}
	var eps []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			eps = append(eps, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(etcdv1beta2.EtcdClientPort)))
		}
	}
	return eps
}

// MemberStatus is one member's own Status answer, by pod.
type MemberStatus struct {
	Pod      string
	ID       uint64
	Version  string
	Leader   uint64
	RaftTerm uint64
	// Revision is the member's own KV revision (what it has applied).
	Revision int64
}

// MemberStatuses asks every member pod for its Status; pods that do not answer
// are left out.
func (e *Env) MemberStatuses(name string) map[string]MemberStatus {
	return StatusesOf(e.MemberPods(name))
}

// StatusesOf asks each of pods (by name) for its Status; pods that do not answer are
// left out. It never fails the test.
func StatusesOf(pods map[string]corev1.Pod) map[string]MemberStatus {
	out := map[string]MemberStatus{}
	for pod, p := range pods {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		ep := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(etcdv1beta2.EtcdClientPort))
		st, err := memberStatus(ep)
		if err != nil {
			continue
		}
		st.Pod = pod
		out[pod] = st
	}
	return out
}

func memberStatus(ep string) (MemberStatus, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return MemberStatus{}, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r, err := cli.Status(ctx, ep)
	if err != nil {
		return MemberStatus{}, err
	}
	return MemberStatus{ID: r.Header.MemberId, Version: r.Version, Leader: r.Leader, RaftTerm: r.RaftTerm, Revision: r.Header.Revision}, nil
}
