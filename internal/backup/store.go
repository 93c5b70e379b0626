// Package backup stores etcd snapshots: a Store interface with an S3-compatible
// implementation (minio-go; AWS, MinIO, Ceph RGW, GCS and OSS interoperability endpoints)
// and a filesystem one (a mounted PersistentVolumeClaim), the CoreOS naming of periodic
// backups and their retention.
//
// Every object is streamed: Put never holds more than a bounded number of upload parts in
// memory, whatever the snapshot's size. The SHA-256 of the stored bytes is computed while
// streaming and kept with the object (S3 user metadata; a sidecar file on a filesystem).
// Get verifies it while streaming and fails the read at EOF on a mismatch, so a consumer
// that reads to the end (as a restore must) never silently accepts a corrupted object.
package backup

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// Store keeps backup objects under keys. Implementations are safe for concurrent use.
type Store interface {
	// Put streams r to key, replacing any object there, and returns what was stored.
	// The object is complete (data and checksum) only when Put returns nil.
	Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (Object, error)
	// Get opens the object at key. The reader yields the original (decompressed) bytes
	// and returns an error wrapping ErrChecksumMismatch instead of io.EOF when the stored
	// bytes do not match the stored checksum. Close it.
	Get(ctx context.Context, key string) (io.ReadCloser, Object, error)
	// List returns the objects whose keys start with prefix (no checksum sidecars).
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes the object at key (and its checksum); a missing object is no error.
	Delete(ctx context.Context, key string) error
	// String names the store for messages, e.g. "s3://bucket" (never credentials).
	String() string
}

// Compression of a stored object.
type Compression string

const (
	// CompressionNone stores the snapshot as is (restorable by any etcdutl).
	CompressionNone Compression = ""
	// CompressionGzip stores the snapshot gzip-compressed.
	CompressionGzip Compression = "gzip"
)

// PutOptions choose how an object is stored.
type PutOptions struct {
	Compression Compression
	// Metadata is small descriptive data kept with the object (e.g. the etcd revision).
	// Keys are lower-case ASCII letters, digits and dashes.
	Metadata map[string]string
	// Size is the length of the reader's bytes when the caller knows it in advance (a
	// snapshot stream announces it); 0: unknown. A store may use it to send the object
	// in one request; Put then fails, storing nothing, if the reader's length differs.
	Size int64
}

// Object describes a stored object.
type Object struct {
	Key  string
	Size int64 // stored bytes (compressed size for gzip)
	// SHA256 is the hex SHA-256 of the stored bytes; empty when the object carries none
	// (e.g. written by CoreOS's operator) or when it came from List.
	SHA256       string
	Compression  Compression
	Metadata     map[string]string
	LastModified time.Time
	// Encryption is the client-side encryption of the stored bytes (backupcrypt's
	// Algorithm) and KeyFingerprint its key's fingerprint; empty for plain objects.
	Encryption, KeyFingerprint string
}

// Errors, for errors.Is. Messages wrapping them name the store and key, never secrets.
var (
	ErrNotFound         = errors.New("backup object not found")
	ErrBucketNotFound   = errors.New("bucket does not exist")
	ErrAccessDenied     = errors.New("access denied (check the credentials and their permissions)")
	ErrChecksumMismatch = errors.New("checksum mismatch: the stored backup is corrupted")
	ErrNoChecksum       = errors.New("backup object carries no checksum")
)

// Metadata keys (S3 user metadata, sidecar fields).
const (
	metaSHA256      = "sha256"
	metaCompression = "compression"
)

// encoder turns the caller's bytes into the stored bytes (optionally gzip) and hashes the
// stored bytes on the way. Compression runs in a goroutine behind a pipe so the stored
// stream is still pulled by the uploader: memory stays bounded by the uploader's buffers.
type encoder struct {
	io.Reader
	h     *asyncHash
	n     int64
	close func()
}

func newEncoder(r io.Reader, c Compression) (*encoder, error) {
	return newEncryptingEncoder(r, c, nil, backupcrypt.Binding{})
}

// newEncryptingEncoder is newEncoder that also encrypts the stored bytes with key (none
// if nil), after compression, bound to bind.
func newEncryptingEncoder(r io.Reader, c Compression, key *backupcrypt.Key, bind backupcrypt.Binding) (*encoder, error) {
	h := newAsyncHash()
	e := &encoder{h: h, close: h.close}
	switch c {
	case CompressionNone:
	case CompressionGzip:
		pr, pw := io.Pipe()
		src := r
		go func() {
			zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
			_, err := io.Copy(zw, src)
			if cerr := zw.Close(); err == nil {
				err = cerr
			}
			pw.CloseWithError(err)
		}()
		// Closing the read side stops the goroutine if the upload gives up early.
		e.close = func() { pr.CloseWithError(errors.New("upload ended")); h.close() }
		r = pr
	default:
		return nil, fmt.Errorf("unknown compression %q", c)
	}
	r, err := encryptStored(r, key, bind)
	if err != nil {
		e.close()
		return nil, err
	}
	e.Reader = io.TeeReader(r, writerFunc(func(p []byte) (int, error) {
		e.n += int64(len(p))
		return e.h.Write(p)
	}))
	return e, nil
}

// sum is the SHA-256 of the stored bytes; call it once the reading is done.
func (e *encoder) sum() string { return hex.EncodeToString(e.h.Sum()) }

// errLength reports a reader whose length was not the one announced in PutOptions.Size.
var errLength = errors.New("the backup stream's length differs from the size announced")

// expectLength makes the encoder fail the read at the end of the stored bytes (instead
// of returning io.EOF) unless exactly n were read, so an upload that announced n bytes
// never completes with other ones.
func (e *encoder) expectLength(n int64) {
	r := e.Reader
	e.Reader = readerFunc(func(p []byte) (int, error) {
		k, err := r.Read(p)
		if e.n > n || (err == io.EOF && e.n != n) {
			return k, fmt.Errorf("%w: %d bytes announced, %d read", errLength, n, e.n)
		}
		return k, err
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// verifier hashes the stored bytes as they are read and, at EOF, compares them with the
// expected checksum.
type verifier struct {
	r      io.Reader
	h      hash.Hash
	want   string
	name   string
	failed error
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.failed != nil {
		return 0, v.failed
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF && v.want != "" {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
			v.failed = fmt.Errorf("%s: %w (stored sha256 %s, read %s)", v.name, ErrChecksumMismatch, v.want, got)
			return n, v.failed
		}
	}
	return n, err
}

// decoder wraps the stored bytes of an object: verification, then decompression.
type decoder struct {
	io.Reader
	closers []io.Closer
}

func (d *decoder) Close() error {
	var errs []error
	for i := len(d.closers) - 1; i >= 0; i-- {
		errs = append(errs, d.closers[i].Close())
	}
	return errors.Join(errs...)
}

func newDecoder(stored io.ReadCloser, obj Object, name string) (io.ReadCloser, error) {
	return newDecryptingDecoder(stored, obj, name, nil, nil, backupcrypt.Expect{})
}

// newDecryptingDecoder is newDecoder for a store with a key (nil: none): verification,
// decryption (of an object bound as want expects), then decompression.
func newDecryptingDecoder(stored io.ReadCloser, obj Object, name string, key *backupcrypt.Key, lim *Limits, want backupcrypt.Expect) (io.ReadCloser, error) {
	if err := checkKey(obj, key, name); err != nil {
		stored.Close()
		return nil, err
	}
	v := &verifier{r: stored, h: sha256.New(), want: obj.SHA256, name: name}
	d := &decoder{Reader: v, closers: []io.Closer{stored}}
	if obj.Encryption != "" {
		plain, err := decryptStored(v, obj, key, name, want)
		if err != nil {
			stored.Close()
			return nil, err
		}
		// As for gzip below: a checksum mismatch is the better diagnosis.
		d.Reader = &drainAtEOF{r: plain, rest: v}
	}
	switch obj.Compression {
	case CompressionNone:
	case CompressionGzip:
		compressed := &sizeCap{r: d.Reader}
		zr, err := gzip.NewReader(compressed)
		if err != nil {
			stored.Close()
			return nil, fmt.Errorf("%s: not gzip data: %w", name, err)
		}
		var plain io.Reader = zr
		if lim != nil {
			// Bounded as it streams: a bomb fails at the limit, not once inflated.
			plain = &inflateCap{r: zr, stored: compressed, lim: lim}
		}
		d.Reader = &drainAtEOF{r: plain, rest: v}
		d.closers = append(d.closers, zr)
	default:
		stored.Close()
		return nil, fmt.Errorf("%s: unknown compression %q", name, obj.Compression)
	}
	return d, nil
}

// drainAtEOF reads the rest of the stored stream when the gzip stream ends, so the
// checksum is verified even if bytes follow the gzip trailer. When decompression fails,
// the stored bytes are read to the end too: a checksum mismatch is the better diagnosis
// than the gzip error it caused.
type drainAtEOF struct {
	r    io.Reader
	rest io.Reader
}

func (d *drainAtEOF) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil {
		if _, derr := io.Copy(io.Discard, d.rest); derr != nil && (err == io.EOF || errors.Is(derr, ErrChecksumMismatch)) {
			return n, derr
		}
	}
	return n, err
}
