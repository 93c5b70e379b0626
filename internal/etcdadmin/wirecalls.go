package etcdadmin

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// The wire counter sees every request that leaves for etcd, retries and the per-endpoint
// probes included, where requests_total counts one operation however many calls it made:
// it is what a member's load from the operator is, so steady state can be measured per
// cluster.

func newWireCalls() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd_operator", Subsystem: "etcd", Name: "requests_total",
		Help: "Requests the operator sent to etcd members on the wire (gRPC calls and HTTP /version probes), by method and result code.",
	}, []string{"method", "code"})
}

func newConnections() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd_operator", Subsystem: "etcd", Name: "connections_total",
		Help: "Connections the operator opened to etcd members (each gRPC transport; an operator at rest should open none).",
	})
}

// connCounter counts the transports gRPC opens: a client per reconcile or a
// per-endpoint call that dials shows here, where the call counter cannot see it.
type connCounter struct{ m *Metrics }

func (connCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (connCounter) HandleRPC(context.Context, stats.RPCStats)                         {}
func (connCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (c connCounter) HandleConn(_ context.Context, s stats.ConnStats) {
	if b, ok := s.(*stats.ConnBegin); ok && b.IsClient() {
		c.m.conns.Inc()
	}
}

// dialOptions count each gRPC call and stream (the label is the full method name,
// e.g. /etcdserverpb.Cluster/MemberList).
func (m *Metrics) dialOptions() []grpc.DialOption {
	if m == nil {
		return nil
	}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		m.wire.WithLabelValues(method, status.Code(err).String()).Inc()
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		m.wire.WithLabelValues(method, status.Code(err).String()).Inc()
		return s, err
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream),
		grpc.WithStatsHandler(connCounter{m})}
}

// countingTransport counts the HTTP requests (the /version probe) beside the gRPC calls.
type countingTransport struct {
	next http.RoundTripper
	m    *Metrics
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "Unavailable"
	if err == nil {
		code = http.StatusText(resp.StatusCode)
	}
	t.m.wire.WithLabelValues("HTTP "+req.Method+" "+req.URL.Path, code).Inc()
	return resp, err
}

func (m *Metrics) transport(next http.RoundTripper) http.RoundTripper {
	if m == nil {
		return next
	}
	return countingTransport{next: next, m: m}
}
