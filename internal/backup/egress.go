package backup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Egress decides which addresses the operator's own process may dial for an S3 endpoint
// a tenant wrote (spec.s3.endpoint). Loopback, link-local (169.254/16, fe80::/10, where
// cloud metadata services answer), unspecified and multicast addresses, and the
// Kubernetes API server's addresses (Deny), are refused. The check runs on the address
// each connection is actually made to (net.Dialer's Control, after DNS resolution), so a
// host name that resolves, or re-resolves, to such an address is refused too: the host
// string alone proves nothing. Allow names exceptions the operator's administrator made.
type Egress struct {
	// Allow lists endpoints dialled without the address check, as host or host:port
	// (--allow-s3-endpoint): the host exactly as the endpoint writes it (a name or an
	// IP), with or without the port; without one, any port of that host.
	Allow []string
	// Deny lists further addresses refused like loopback (the API server's).
	Deny []netip.Addr
}

// ErrEndpointRefused reports an S3 endpoint the operator will not dial.
var ErrEndpointRefused = errors.New("S3 endpoint refused")

// endpointRefused names the endpoint as the tenant wrote it and the class of address it
// reached, never the address itself.
type endpointRefused struct {
	host, class string
}

func (e *endpointRefused) Error() string {
	return fmt.Sprintf("S3 endpoint %.100q resolves to %s, which the operator does not dial (an operator flag --allow-s3-endpoint=host[:port] makes an exception)", e.host, e.class)
}

func (e *endpointRefused) Unwrap() error { return ErrEndpointRefused }

// refusedClass says why the operator does not dial a, or "" if it may.
func (g *Egress) refusedClass(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "a link-local address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast() || a.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, d := range g.Deny {
		if d.Unmap() == a {
			return "an address of the Kubernetes API server"
		}
	}
	return ""
}

// allowed: hostport (as dialled, host:port) is one of g.Allow.
func (g *Egress) allowed(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	for _, a := range g.Allow {
		a = strings.TrimSpace(a)
		if strings.EqualFold(a, hostport) || strings.EqualFold(strings.Trim(a, "[]"), host) {
			return true
		}
	}
	return false
}

// CheckHost refuses an endpoint host written as a literal address the operator does not
// dial, before anything is dialled (names are checked when dialled).
func (g *Egress) CheckHost(hostport string) error {
	if g == nil || g.allowed(hostport) {
		return nil
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
			return &endpointRefused{host, "a loopback address"}
		}
		return nil
	}
	if class := g.refusedClass(a); class != "" {
		return &endpointRefused{host, class}
	}
	return nil
}

// Timeouts of the operator's connections to S3 endpoints.
const (
	egressDialTimeout     = 10 * time.Second
	egressTLSTimeout      = 10 * time.Second
	egressResponseTimeout = 30 * time.Second
)

// Transport is an HTTP transport that dials only what g allows, with deadlines on
// connecting, the TLS handshake and the response headers. It never goes through an
// HTTP proxy: the address check must see the endpoint's own address. base, if set,
// supplies the TLS configuration.
func (g *Egress) Transport(base *http.Transport) *http.Transport {
	var t *http.Transport
	if base != nil {
		t = base.Clone()
	} else {
		t = http.DefaultTransport.(*http.Transport).Clone()
	}
	t.Proxy = nil
	t.TLSHandshakeTimeout = egressTLSTimeout
	t.ResponseHeaderTimeout = egressResponseTimeout
	t.ExpectContinueTimeout = time.Second
	t.MaxResponseHeaderBytes = 64 << 10
	plain := &net.Dialer{Timeout: egressDialTimeout, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if g == nil || g.allowed(addr) {
			return plain.DialContext(ctx, network, addr)
		}
		// Every address the name resolves to is checked as it is connected to (a
		// literal address too): what DNS answers cannot steer the connection.
		host, _, _ := net.SplitHostPort(addr)
		d := &net.Dialer{Timeout: egressDialTimeout, KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return &endpointRefused{host, "an address that cannot be checked"}
				}
				if class := g.refusedClass(ap.Addr()); class != "" {
					return &endpointRefused{host, class}
				}
				return nil
			}}
		return d.DialContext(ctx, network, addr)
	}
	return t
}
