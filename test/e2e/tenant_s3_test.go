package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/bench"
)

// hostileS3 is a tenant's S3-ish endpoint, served by the test inside the bench's network
// namespace on the control-plane address (the one S3 address the bench's operator may
// dial, as MinIO's): path-style buckets, each an attack.
//
//	bomb/<key>      a gzip-compressed "snapshot" that inflates to bombInflated bytes
//	                from a few MB stored (gzip members of zeros, concatenated)
//	endless/<key>   no object; a listing that never ends (every page truncated, 1,000 keys)
//	tarpit/<key>    every request is accepted and never answered until the test ends
//
// It counts what it served, so the test can say how far the operator let each go.
type hostileS3 struct {
	URL string

	srv     *http.Server
	release chan struct{}
	once    sync.Once

	bombMember   []byte // one gzip member of bombMemberSize zeros
	bombMembers  int
	bombServed   atomic.Int64 // stored bytes of the bomb sent
	listPages    atomic.Int64
	tarpitWaits  atomic.Int64 // requests held
	tarpitActive atomic.Int64
	tarpitLists  atomic.Int64 // of the requests held, listings
	tarpitReads  atomic.Int64 // of the requests held, object reads (GET or HEAD of a key)
	tarpitPeak   atomic.Int64 // most requests held at once
}

const (
	bombMemberSize = 64 << 20
	bombInflated   = 4 << 30 // past the operator's floor (1 GiB) and its ratio (100x)
)

func startHostileS3(t *testing.T) *hostileS3 {
	t.Helper()
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range bombMemberSize / len(zeros) {
		zw.Write(zeros)
	}
	zw.Close()
	h := &hostileS3{release: make(chan struct{}), bombMember: z.Bytes(), bombMembers: bombInflated / bombMemberSize}
	ln, err := net.Listen("tcp", net.JoinHostPort(bench.ControlPlaneIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	h.URL = "http://" + ln.Addr().String()
	h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
	go h.srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() {
		h.once.Do(func() { close(h.release) })
		h.srv.Close()
	})
	t.Logf("hostile S3 endpoint %s: bomb %d MiB stored, %d GiB inflated", h.URL, len(h.bombMember)*h.bombMembers>>20, bombInflated>>30)
	return h
}

func (h *hostileS3) serve(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	if _, ok := q["location"]; ok {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">us-east-1</LocationConstraint>`)
		return
	}
	switch bucket {
	case "tarpit":
		h.tarpitWaits.Add(1)
		switch {
		case q.Get("list-type") != "":
			h.tarpitLists.Add(1)
		case key != "":
			h.tarpitReads.Add(1)
		}
		raiseTo(&h.tarpitPeak, h.tarpitActive.Add(1))
		defer h.tarpitActive.Add(-1)
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	case "endless":
		if q.Get("list-type") == "" {
			notFound(w, r)
			return
		}
		page := h.listPages.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		var b strings.Builder
		fmt.Fprintf(&b, `<ListBucketResult><Name>endless</Name><Prefix>%s</Prefix><IsTruncated>true</IsTruncated><NextContinuationToken>t%d</NextContinuationToken><KeyCount>1000</KeyCount>`, q.Get("prefix"), page)
		for i := range 1000 {
			fmt.Fprintf(&b, `<Contents><Key>%s_v%d_2026-12-05-20:%02d:%02d</Key><Size>1048576</Size></Contents>`, q.Get("prefix"), page*1000+int64(i), i/60%60, i%60)
		}
		b.WriteString(`</ListBucketResult>`)
		io.WriteString(w, b.String())
	case "bomb":
		if key == "" || strings.HasSuffix(key, ".sha256") {
			if q.Get("list-type") != "" {
				w.Header().Set("Content-Type", "application/xml")
				io.WriteString(w, `<ListBucketResult><Name>bomb</Name><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></ListBucketResult>`)
				return
			}
			notFound(w, r)
			return
		}
		size := len(h.bombMember) * h.bombMembers
		w.Header().Set("X-Amz-Meta-Compression", "gzip")
		w.Header().Set("X-Amz-Meta-Etcd-Version", "3.6.16")
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.Header().Set("Content-Type", "application/octet-stream")
		if r.Method == http.MethodHead {
			return
		}
		for range h.bombMembers {
			n, err := w.Write(h.bombMember)
			h.bombServed.Add(int64(n))
			if err != nil {
				return
			}
		}
	default:
		notFound(w, r)
	}
}

func notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		io.WriteString(w, `<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
	}
}

// raiseTo sets v to n if n is larger.
func raiseTo(v *atomic.Int64, n int64) {
	for cur := v.Load(); n > cur && !v.CompareAndSwap(cur, n); cur = v.Load() {
	}
}
