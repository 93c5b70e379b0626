package render

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// checkDialURL reports why s is not a URL a member pod can dial another member at:
// http(s)://host:port and nothing more, an IPv6 host in brackets. A pod IP joined to its
// port without brackets ("http://fd00::5:2379") must be refused here, with a hint, and
// not fail later inside the pod; url.Parse alone refuses it only from Go 1.26 on (before,
// and with GODEBUG=urlstrictcolons=0, it reads the last colon as the port separator).
func checkDialURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return bracketHint(s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme must be http or https", s)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want scheme://host:port and nothing more", s)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return bracketHint(s, fmt.Errorf("%q: %w", s, err))
	}
	if host == "" || port == "" {
		return fmt.Errorf("%q: want both a host and a port", s)
	}
	return nil
}

// bracketHint adds to err how to write an IPv6 host when s has colons beyond the
// scheme's and the port's.
func bracketHint(s string, err error) error {
	if strings.Count(s, ":") > 2 && !strings.Contains(s, "[") {
		return fmt.Errorf("%w (an IPv6 address goes in brackets, http://[fd00::5]:2379)", err)
	}
	return err
}
