package backup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
)

// Limits bound the work an S3 endpoint chosen by a tenant can make the operator's own
// process do: every request has a deadline, a transfer that stalls or drips fails,
// listings and downloads have a size, and decompression a size and a ratio. A store
// without Limits (in a pod the tenant's own resources bound) has none of these.
type Limits struct {
	// RequestTimeout bounds each request that moves no object data (stat, checksum
	// object, delete, each listing page).
	RequestTimeout time.Duration
	// ListTimeout bounds a whole listing, every page included.
	ListTimeout time.Duration
	// MaxListKeys and MaxListPages bound a listing: past either it fails with
	// ErrLimitExceeded instead of growing the operator's memory.
	MaxListKeys, MaxListPages int
	// MaxResponseBytes bounds every response body that is not object data (listing
	// pages, errors, bucket locations).
	MaxResponseBytes int64
	// StallTimeout fails a transfer (download or upload) that moves no byte for this
	// long; MinRate (bytes per second, after StallTimeout) one that moves too few.
	StallTimeout time.Duration
	MinRate      int64
	// MaxObjectBytes bounds the stored bytes of an object read, and what it decodes
	// to; MaxInflateRatio bounds decoded bytes per stored byte once more than
	// InflateFloor bytes are decoded (a gzip bomb is refused at the floor, not at the
	// size).
	MaxObjectBytes  int64
	MaxInflateRatio int64
	InflateFloor    int64
}

// OperatorLimits are the limits of the operator's own process (see Limits). A real
// listing page is ~1,000 keys of at most 1 KiB; etcd's quota is at most 8 GiB in
// practice (64 GiB allowed), its snapshots compress ~2-20x (zero-filled free pages more).
func OperatorLimits(maxObject int64) *Limits {
	if maxObject <= 0 {
		maxObject = DefaultMaxObjectBytes
	}
	return &Limits{
		RequestTimeout: 30 * time.Second, ListTimeout: 2 * time.Minute,
		MaxListKeys: 50_000, MaxListPages: 500, MaxResponseBytes: 16 << 20,
		StallTimeout: 30 * time.Second, MinRate: 64 << 10,
		MaxObjectBytes: maxObject, MaxInflateRatio: 100, InflateFloor: 1 << 30,
	}
}

// DefaultMaxObjectBytes is the largest backup the operator reads by default: etcd's
// recommended largest database (8 GiB) with room to spare.
const DefaultMaxObjectBytes = 16 << 30

var (
	// ErrLimitExceeded reports a listing, download or decompression past Limits.
	ErrLimitExceeded = errors.New("exceeds the operator's limit")
	// ErrStalled reports a transfer that stopped moving, or moved too slowly.
	ErrStalled = errors.New("the S3 endpoint stopped sending or receiving data (or was too slow)")
)

// listPages counts the pages of one listing (a context value the transport sees).
type listPagesKey struct{}

type pageCount struct {
	mu  sync.Mutex
	n   int
	max int
}

// limitTransport bounds response bodies and listing pages.
type limitTransport struct {
	base http.RoundTripper
	lim  *Limits
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if pc, ok := req.Context().Value(listPagesKey{}).(*pageCount); ok {
		pc.mu.Lock()
		pc.n++
		over := pc.max > 0 && pc.n > pc.max
		pc.mu.Unlock()
		if over {
			return nil, fmt.Errorf("listing: more than %d pages %w", pc.max, ErrLimitExceeded)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	// Object data (a successful GET without a sub-resource query) is bounded by the
	// store's reader; every other body by MaxResponseBytes.
	object := req.Method == http.MethodGet && req.URL.RawQuery == "" && resp.StatusCode/100 == 2
	if !object && t.lim.MaxResponseBytes > 0 {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.lim.MaxResponseBytes}
	}
	return resp, nil
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("S3 response body %w", ErrLimitExceeded)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// withTimeout derives a context bounded by d (none if d is 0).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// watchdog cancels a transfer's context when it moves no byte for lim.StallTimeout or
// falls below lim.MinRate. Call progress on every read; stop when done.
type watchdog struct {
	cancel context.CancelCauseFunc
	timer  *time.Timer
	stall  time.Duration
	min    int64
	start  time.Time
	n      int64
}

func newWatchdog(ctx context.Context, lim *Limits) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{cancel: cancel, stall: lim.StallTimeout, min: lim.MinRate, start: time.Now()}
	if w.stall > 0 {
		w.timer = time.AfterFunc(w.stall, func() { cancel(ErrStalled) })
	}
	return ctx, w
}

// progress records n more bytes and fails once the transfer is too slow.
func (w *watchdog) progress(n int) error {
	w.n += int64(n)
	if w.timer != nil && n > 0 {
		w.timer.Reset(w.stall)
	}
	if el := time.Since(w.start); w.min > 0 && el > w.stall && w.n < int64(el.Seconds()*float64(w.min)) {
		w.cancel(ErrStalled)
		return fmt.Errorf("%w: %d bytes in %s", ErrStalled, w.n, el.Round(time.Second))
	}
	return nil
}

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(context.Canceled)
}

// watchedReader reports progress of r to w and fails with the watchdog's cause.
type watchedReader struct {
	r   io.Reader
	w   *watchdog
	ctx context.Context
}

func (r *watchedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if perr := r.w.progress(n); perr != nil {
		return n, perr
	}
	if err != nil && err != io.EOF {
		if cause := context.Cause(r.ctx); errors.Is(cause, ErrStalled) {
			return n, fmt.Errorf("%w: %w", ErrStalled, err)
		}
	}
	return n, err
}

// sizeCap fails a read past max bytes.
type sizeCap struct {
	r    io.Reader
	n    int64
	max  int64
	what string
}

func (c *sizeCap) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.max > 0 && c.n > c.max {
		return n, fmt.Errorf("%s: more than %d bytes %w", c.what, c.max, ErrLimitExceeded)
	}
	return n, err
}

// inflateCap fails decompression past lim.MaxObjectBytes decoded bytes, or past
// lim.MaxInflateRatio decoded bytes per stored byte consumed once more than
// lim.InflateFloor are decoded: a gzip bomb fails as soon as it shows, after at most the
// floor, never decompressed in full.
type inflateCap struct {
	r      io.Reader
	stored *sizeCap // the compressed bytes consumed so far
	out    int64
	lim    *Limits
}

func (c *inflateCap) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.out += int64(n)
	if m := c.lim.MaxObjectBytes; m > 0 && c.out > m {
		return n, fmt.Errorf("decompressed backup: more than %d bytes %w", m, ErrLimitExceeded)
	}
	if r := c.lim.MaxInflateRatio; r > 0 && c.out > c.lim.InflateFloor && c.out > r*max(c.stored.n, 1) {
		return n, fmt.Errorf("decompressed backup: %d bytes from %d compressed, more than %dx %w (a decompression bomb?)", c.out, c.stored.n, r, ErrLimitExceeded)
	}
	return n, err
}

// s3CodeRE is what an S3 error code looks like; anything else the endpoint sends is
// not repeated.
var s3CodeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]{0,39}$`)

// sanitized is an error of a tenant's S3 endpoint as the operator reports it: the
// class of failure and the HTTP status, never the response body, the TLS library's
// words (certificate names of whatever answered) or an address the tenant did not
// write. It still matches the errors it stands for with errors.Is.
type sanitized struct {
	msg   string
	kinds []error
}

func (e *sanitized) Error() string   { return e.msg }
func (e *sanitized) Unwrap() []error { return e.kinds }

// maxNameInMessage bounds the object name in an error message.
const maxNameInMessage = 120

// sanitize describes err by its class; kind, if set, is the store error it maps to.
func sanitize(op, name string, err, kind error) error {
	if len(name) > maxNameInMessage {
		name = name[:maxNameInMessage] + "..."
	}
	kinds := []error{}
	if kind != nil {
		kinds = append(kinds, kind)
	}
	for _, k := range []error{ErrLimitExceeded, ErrStalled, ErrEndpointRefused, ErrChecksumMismatch, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, k) {
			kinds = append(kinds, k)
		}
	}
	msg := fmt.Sprintf("%s %s: %s", op, name, errorClass(err))
	if kind != nil {
		// What it means, in the operator's words (e.g. "access denied (check the
		// credentials and their permissions)").
		msg += ": " + kind.Error()
	}
	return &sanitized{msg: msg, kinds: kinds}
}

// errorClass names what went wrong in at most ~150 characters of the operator's words.
func errorClass(err error) string {
	var refused *endpointRefused
	var resp minio.ErrorResponse
	var dns *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	var sane *sanitized
	switch {
	case errors.As(err, &sane):
		return sane.msg
	case errors.As(err, &refused):
		return refused.Error()
	case errors.Is(err, ErrLimitExceeded), errors.Is(err, ErrStalled), errors.Is(err, ErrChecksumMismatch):
		// The operator's own words (limits, checksums): bounded.
		s := err.Error()
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		return s
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &resp) && resp.StatusCode != 0:
		s := fmt.Sprintf("HTTP %d", resp.StatusCode)
		if s3CodeRE.MatchString(resp.Code) {
			s += " " + resp.Code
		}
		return s
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "the endpoint's host name does not resolve"
		}
		return "the endpoint's host name could not be resolved"
	case errors.As(err, &unknownCA):
		return "TLS: the endpoint's certificate is signed by an unknown authority"
	case errors.As(err, &hostname):
		return "TLS: the endpoint's certificate is not valid for its host name"
	case errors.As(err, &invalid):
		return "TLS: the endpoint's certificate is invalid (expired, not yet valid or not for serving)"
	case errors.As(err, &verify):
		return "TLS: the endpoint's certificate does not verify"
	case errors.As(err, &record):
		return "TLS: the endpoint does not speak TLS"
	case errors.As(err, &alert):
		return "TLS: the handshake failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed early"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the endpoint"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	return "the request failed"
}
