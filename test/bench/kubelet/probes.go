package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeParams are a probe's timings with the Kubernetes defaults applied.
type probeParams struct {
	initialDelay, period, timeout time.Duration
	failureThreshold              int
	successThreshold              int
}

func paramsOf(p *v1.Probe) probeParams {
	pp := probeParams{
		initialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		period:           10 * time.Second,
		timeout:          time.Second,
		failureThreshold: 3,
		successThreshold: 1,
	}
	if p.PeriodSeconds > 0 {
		pp.period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		pp.timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.FailureThreshold > 0 {
		pp.failureThreshold = int(p.FailureThreshold)
	}
	if p.SuccessThreshold > 0 {
		pp.successThreshold = int(p.SuccessThreshold)
	}
	return pp
}

// probeLoop runs check every period after the initial delay and calls report when the
// result flips: to true after successThreshold consecutive successes, to false after
// failureThreshold consecutive failures. report returns false to end the loop.
func probeLoop(ctx context.Context, pp probeParams, check func(context.Context) error, report func(ok bool, err error) bool) {
	if !sleepCtx(ctx, pp.initialDelay) {
		return
	}
	var succ, fail int
	var state *bool
	for {
		cctx, cancel := context.WithTimeout(ctx, pp.timeout)
		err := check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			succ, fail = succ+1, 0
			if succ >= pp.successThreshold && (state == nil || !*state) {
				t := true
				state = &t
				if !report(true, nil) {
					return
				}
			}
		} else {
			succ, fail = 0, fail+1
			if fail >= pp.failureThreshold && (state == nil || *state) {
				f := false
				state = &f
				if !report(false, err) {
					return
				}
			}
		}
		if !sleepCtx(ctx, pp.period) {
			return
		}
	}
}

// sleepCtx sleeps d and reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// resolvePort resolves a probe port, which may name one of the container's ports.
func resolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("no port named %q", port.StrVal)
}

// probeChecker builds the check function of a probe against a pod IP; execProbe runs an
// exec probe's command in the container's view of the filesystem.
func probeChecker(p *v1.Probe, c *v1.Container, podIP string, execProbe func(ctx context.Context, cmd []string) error) (func(context.Context) error, error) {
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		port, err := resolvePort(g.Port, c)
		if err != nil {
			return nil, err
		}
		host := g.Host
		if host == "" {
			host = podIP
		}
		scheme := "http"
		if g.Scheme == v1.URISchemeHTTPS {
			scheme = "https"
		}
		u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
		target := u.String() + g.Path
		if g.Path == "" || g.Path[0] != '/' {
			target = u.String() + "/" + g.Path
		}
		client := &http.Client{
			// Like the kubelet: TLS is not verified, and a redirect counts as success
			// rather than being followed to another host.
			Transport: &http.Transport{
				TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probe semantics
				DisableKeepAlives: true,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return err
			}
			req.Header.Set("User-Agent", "kube-probe/1.37")
			for _, h := range g.HTTPHeaders {
				req.Header.Set(h.Name, h.Value)
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode < 200 || resp.StatusCode >= 400 {
				return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
			}
			return nil
		}, nil
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, c)
		if err != nil {
			return nil, err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		return func(ctx context.Context) error {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			return conn.Close()
		}, nil
	case p.Exec != nil:
		cmd := p.Exec.Command
		return func(ctx context.Context) error { return execProbe(ctx, cmd) }, nil
	}
	return nil, fmt.Errorf("probe type not supported by the bench kubelet (grpc?)")
}
