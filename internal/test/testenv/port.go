package testenv

import (
	"net"
	"testing"
)

// FreePort is a loopback TCP port free a moment ago, for a process a test starts (etcd,
// MinIO, CoreDNS). Another process may take it before that one binds it; the tests'
// processes fail to start then, they do not share a port.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
