package backup_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// fakeS3 answers as a hostile S3 endpoint might: handler decides.
func fakeS3(t *testing.T, h http.HandlerFunc) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, srv.URL
}

func openFake(t *testing.T, endpoint string, eg *backup.Egress, lim *backup.Limits) (*backup.S3, error) {
	t.Helper()
	return backup.NewS3(backup.S3Config{Endpoint: endpoint, Bucket: "bkt", ForcePathStyle: true,
		Credentials: backup.AWSCredentials{AccessKeyID: "id", SecretAccessKey: "secret", Region: "us-east-1"},
		Egress:      eg, Limits: lim})
}

// hostOf is the host:port of an http:// URL.
func hostOf(u string) string { return strings.TrimPrefix(u, "http://") }

// An endpoint at a loopback, link-local, unspecified or API server address is refused
// before anything is dialled, by the address written and by the addresses a name
// resolves to when dialled; --allow-s3-endpoint's exceptions are dialled.
func TestEgressRefusesInternalAddresses(t *testing.T) {
	dialled := 0
	_, url := fakeS3(t, func(w http.ResponseWriter, r *http.Request) { dialled++; w.WriteHeader(404) })
	apiServer := netip.MustParseAddr("10.96.0.1")
	eg := &backup.Egress{Deny: []netip.Addr{apiServer}}
	for _, ep := range []string{url, "http://169.254.169.254", "https://[fe80::1]:9000", "http://0.0.0.0:9000", "https://10.96.0.1", "http://[::ffff:127.0.0.1]:80", "http://localhost:9000"} {
		_, err := openFake(t, ep, eg, nil)
		if !errors.Is(err, backup.ErrEndpointRefused) {
			t.Errorf("%s: %v, want ErrEndpointRefused", ep, err)
			continue
		}
		if strings.Contains(err.Error(), "10.96.0.1") && ep != "https://10.96.0.1" {
			t.Errorf("%s: the refusal names an address the tenant did not write: %v", ep, err)
		}
	}
	// A name is checked on the address it resolves to, when dialled.
	_, port, _ := net.SplitHostPort(hostOf(url))
	conn, err := eg.Transport(nil).DialContext(context.Background(), "tcp", net.JoinHostPort("localhost", port))
	if err == nil {
		conn.Close()
		t.Fatal("localhost dialled")
	}
	// (The dialler's own error names the address; the store reports the refusal's own
	// words, see TestEndpointErrorsAreSanitised.)
	if !errors.Is(err, backup.ErrEndpointRefused) {
		t.Errorf("dial localhost: %v, want ErrEndpointRefused", err)
	}
	if dialled != 0 {
		t.Fatalf("the refused endpoint answered %d requests", dialled)
	}
	// An exception, by host or host:port, is dialled.
	for _, allow := range []string{"127.0.0.1", hostOf(url)} {
		s, err := openFake(t, url, &backup.Egress{Allow: []string{allow}}, nil)
		if err != nil {
			t.Fatalf("allowed %s: %v", allow, err)
		}
		if _, _, err := s.Get(context.Background(), "k"); !errors.Is(err, backup.ErrNotFound) {
			t.Errorf("allowed %s: get: %v, want the endpoint's 404", allow, err)
		}
	}
	if dialled == 0 {
		t.Error("the allowed endpoint was never dialled")
	}
}

var allowLoopback = &backup.Egress{Allow: []string{"127.0.0.1"}}

// What a tenant's endpoint answers never reaches a message verbatim: its body, its
// TLS certificate's names and addresses it resolved to are reported by class.
func TestEndpointErrorsAreSanitised(t *testing.T) {
	const secret = "internal-db.corp 10.9.8.7 <html>admin console</html>"
	_, url := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "<Error><Code>%s</Code><Message>%s</Message></Error>", "AccessDenied", secret)
	})
	s, err := openFake(t, url, allowLoopback, backup.OperatorLimits(0))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get(context.Background(), "k")
	if !errors.Is(err, backup.ErrAccessDenied) || !strings.Contains(err.Error(), "HTTP 403") || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("get: %v, want ErrAccessDenied with the status", err)
	}
	if _, err := s.List(context.Background(), "p"); err == nil || strings.Contains(err.Error(), "10.9.8.7") || strings.Contains(err.Error(), "admin console") {
		t.Errorf("list: %v", err)
	}
	if err != nil && (strings.Contains(err.Error(), "10.9.8.7") || strings.Contains(err.Error(), "admin")) {
		t.Errorf("the body reached the message: %v", err)
	}

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(tlsSrv.Close)
	s, err = openFake(t, tlsSrv.URL, allowLoopback, backup.OperatorLimits(0))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get(context.Background(), "k")
	if err == nil || !strings.Contains(err.Error(), "unknown authority") || strings.Contains(err.Error(), "x509") || strings.Contains(err.Error(), "example.com") {
		t.Errorf("TLS: %v, want the class of the certificate error only", err)
	}
	if err != nil && len(err.Error()) > 250 {
		t.Errorf("message of %d characters", len(err.Error()))
	}
}

// An endless listing fails at the page limit instead of growing the operator's heap.
func TestEndlessListingIsCapped(t *testing.T) {
	pages := 0
	_, url := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("list-type") == "" {
			w.WriteHeader(404)
			return
		}
		pages++
		w.Header().Set("Content-Type", "application/xml")
		var b strings.Builder
		fmt.Fprintf(&b, `<ListBucketResult><Name>bkt</Name><IsTruncated>true</IsTruncated><NextContinuationToken>t%d</NextContinuationToken><KeyCount>100</KeyCount>`, pages)
		for i := range 100 {
			fmt.Fprintf(&b, `<Contents><Key>p/%d-%d</Key><Size>1</Size></Contents>`, pages, i)
		}
		b.WriteString(`</ListBucketResult>`)
		io.WriteString(w, b.String())
	})
	lim := backup.OperatorLimits(0)
	lim.MaxListPages, lim.MaxListKeys = 20, 1000
	s, err := openFake(t, url, allowLoopback, lim)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.List(context.Background(), "p/")
	if !errors.Is(err, backup.ErrLimitExceeded) || !strings.Contains(err.Error(), "1000 keys") {
		t.Fatalf("list: %v, want ErrLimitExceeded at 1000 keys", err)
	}
	if pages > 12 {
		t.Errorf("%d pages read for 1000 keys", pages)
	}
	lim.MaxListKeys = 1 << 20
	pages = 0
	if _, err = s.List(context.Background(), "p/"); !errors.Is(err, backup.ErrLimitExceeded) || !strings.Contains(err.Error(), "pages") {
		t.Fatalf("list: %v, want ErrLimitExceeded at 20 pages", err)
	}
}

// object serves one object (HEAD and GET) with the given metadata and body.
func object(body []byte, meta map[string]string, slow bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/bkt/k") {
			w.WriteHeader(404)
			return
		}
		for k, v := range meta {
			w.Header().Set("X-Amz-Meta-"+k, v)
		}
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		if slow {
			w.Write(body[:10])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		w.Write(body)
	}
}

// A gzip bomb is refused once it inflates past the ratio (after the floor), reading a
// bounded part of it, never decompressed in full.
func TestGzipBombIsRefusedEarly(t *testing.T) {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 256 { // 256 MiB of zeros, ~250 KiB stored
		zw.Write(zeros)
	}
	zw.Close()
	_, url := fakeS3(t, object(z.Bytes(), map[string]string{"Compression": "gzip"}, false))
	lim := backup.OperatorLimits(0)
	lim.InflateFloor = 8 << 20
	s, err := openFake(t, url, allowLoopback, lim)
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if !errors.Is(err, backup.ErrLimitExceeded) {
		t.Fatalf("read %d bytes: %v, want ErrLimitExceeded", n, err)
	}
	if n > 16<<20 {
		t.Errorf("%d bytes decompressed before the refusal (floor 8 MiB)", n)
	}

	// The decoded size alone is capped too, and the stored size before a download.
	lim = backup.OperatorLimits(4 << 20)
	lim.MaxInflateRatio = 0
	s, _ = openFake(t, url, allowLoopback, lim)
	rc, _, err = s.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, rc); !errors.Is(err, backup.ErrLimitExceeded) || n > 5<<20 {
		t.Errorf("size cap: %d bytes, %v", n, err)
	}
	rc.Close()
	s, _ = openFake(t, url, allowLoopback, backup.OperatorLimits(1000))
	if _, _, err := s.Get(context.Background(), "k"); !errors.Is(err, backup.ErrLimitExceeded) {
		t.Errorf("stored size over the cap: %v", err)
	}
}

// An endpoint that stops sending mid-object fails the read with ErrStalled.
func TestStalledDownloadFails(t *testing.T) {
	_, url := fakeS3(t, object(make([]byte, 1<<20), nil, true))
	lim := backup.OperatorLimits(0)
	lim.StallTimeout = 300 * time.Millisecond
	s, _ := openFake(t, url, allowLoopback, lim)
	rc, _, err := s.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, backup.ErrStalled) {
		t.Fatalf("read: %v, want ErrStalled", err)
	}
}
