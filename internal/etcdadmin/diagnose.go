package etcdadmin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// When a gRPC call waits for a connection that never becomes ready, clientv3
// reports only "context deadline exceeded": the reason (nothing listens, the
// TLS handshake fails, packets vanish) is lost, yet it is what an operator's
// status condition must say. diagnose finds it with a plain TCP (and TLS)
// connection to the endpoint.

const diagnoseTimeout = time.Second

// diagnose returns why ep cannot be reached, or nil if a connection (and TLS
// handshake) succeeds.
func (a *Admin) diagnose(ctx context.Context, ep string) error {
	host, useTLS, err := a.hostPort(ep)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		if isTimeout(err) {
			return fmt.Errorf("no answer from %s within %v (down or partitioned)", host, diagnoseTimeout)
		}
		return err
	}
	defer conn.Close()
	if !useTLS {
		return nil
	}
	cfg := &tls.Config{}
	if a.cfg.TLS != nil {
		cfg = a.cfg.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(host)
	}
	// etcd speaks HTTP/2 over TLS to gRPC clients.
	cfg.NextProtos = []string{"h2"}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake with %s: %w", host, err)
	}
	// With TLS 1.3 the server checks the client certificate after the
	// client's handshake has finished: a rejection arrives as an alert on the
	// first read. A healthy server just waits for us, so the read times out.
	_ = tc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b [1]byte
	if _, err := tc.Read(b[:]); err != nil && !isTimeout(err) {
		return fmt.Errorf("TLS session with %s: %w", host, err)
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// hostPort splits an endpoint into host:port and whether TLS is used, the way
// clientv3 interprets it (a scheme-less endpoint uses TLS iff a TLS config is set).
func (a *Admin) hostPort(ep string) (string, bool, error) {
	if !strings.Contains(ep, "://") {
		return ep, a.cfg.TLS != nil, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", false, err
	}
	return u.Host, u.Scheme == "https" || u.Scheme == "unixs", nil
}

// withDiagnosis adds the reason an endpoint could not be reached to an error
// that says only that time ran out, or only that a kept connection broke ("error
// reading from server: EOF" when the member died under it).
func (a *Admin) withDiagnosis(ctx context.Context, err error, eps ...string) error {
	if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline exceeded") &&
		status.Code(err) != codes.Unavailable {
		return err
	}
	var why []error
	for _, ep := range eps {
		if d := a.diagnose(ctx, ep); d != nil {
			why = append(why, d)
		}
	}
	if len(why) == 0 {
		return err
	}
	return &diagnosedError{err: err, why: why}
}

// diagnosedError is an error with the reasons found for it; both stay in the chain
// (errors.Is/As), so callers can tell e.g. a TLS rejection from a plain timeout.
type diagnosedError struct {
	err error
	why []error
}

func (e *diagnosedError) Error() string {
	msgs := make([]string, len(e.why))
	for i, w := range e.why {
		msgs[i] = w.Error()
	}
	return fmt.Sprintf("%v (%s)", e.err, strings.Join(msgs, "; "))
}

func (e *diagnosedError) Unwrap() []error { return append([]error{e.err}, e.why...) }
