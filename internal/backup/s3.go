package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// S3Config locates a bucket in an S3-compatible store.
type S3Config struct {
	// Endpoint is a URL (https://host:port or http://host:port) or host:port (HTTPS).
	// Empty means AWS (s3.amazonaws.com).
	Endpoint string
	// Bucket holds the backups.
	Bucket string
	// ForcePathStyle addresses the bucket as <endpoint>/<bucket>.
	ForcePathStyle bool
	Credentials    AWSCredentials
	// Ambient, instead of Credentials, takes the process's own credentials
	// (AmbientCredentials).
	Ambient bool
	// Transport overrides the HTTP transport (e.g. custom CAs); nil: the default.
	Transport http.RoundTripper
	// PartSize and Parts bound the memory of an upload of unknown length (a gzip-compressed
	// backup): at most Parts buffers of PartSize bytes are held at once. Defaults 5 MiB
	// (S3's smallest part) and 2 (10 MiB; 10,000 parts allow 48 GiB, far above etcd's
	// largest database). Measured (test/benchmark/backup_test.go, when every backup was a
	// multipart upload): the process grew by about twice the buffers plus its own live
	// heap (the Go heap's GC headroom, filled by the snapshot stream's garbage): 8 MiB
	// parts grew it by ~44 MiB, 5 MiB parts by ~31 MiB, at the same throughput. A second
	// buffer lets reading overlap uploading (one buffer halved the throughput); more
	// bought none on 2 cores. A backup of known length (an uncompressed snapshot, plain or
	// encrypted, up to MaxSinglePut) is one streamed PUT and holds no part buffers: the
	// process then grew by 3.7–4.6 MiB per backup (BenchmarkBackup256MiB, 2026-12-04).
	PartSize uint64
	Parts    uint
	// Key, if set, encrypts every object Put stores and is required to Get one (see
	// encryption.go); nil: objects are stored as they are and encrypted ones refused.
	Key *backupcrypt.Key
	// Namespace and Backup are the EtcdBackup whose objects this store reads and writes
	// (Backup may be empty when the reader does not know it): an encrypted object is
	// bound to them, its key and its revision (see encryption.go), and Get refuses one
	// bound to another namespace or EtcdBackup.
	Namespace, Backup string
	// Egress, if set, is the operator's check of the endpoint's addresses (see Egress);
	// it replaces Transport's dialling (keeping its TLS settings, if an *http.Transport).
	Egress *Egress
	// Limits, if set, bound the work the endpoint can cause (see Limits).
	Limits *Limits
}

// Upload buffer defaults; see S3Config.
const (
	DefaultPartSize = 5 << 20
	DefaultParts    = 2
)

// MaxSinglePut is the largest object sent as one PUT (S3's limit for a single
// request); a larger one is uploaded in parts.
const MaxSinglePut = 5 << 30

// SplitS3Path splits the CoreOS path "<bucket>/<key>".
func SplitS3Path(p string) (bucket, key string, err error) {
	bucket, key, ok := strings.Cut(strings.TrimPrefix(p, "s3://"), "/")
	if !ok || bucket == "" || key == "" {
		return "", "", fmt.Errorf("S3 path %q is not <bucket>/<key>", p)
	}
	return bucket, key, nil
}

// S3 is a Store in one bucket of an S3-compatible service.
type S3 struct {
	c        *minio.Client
	bucket   string
	partSize uint64
	parts    uint
	key      *backupcrypt.Key
	lim      *Limits
	// owner is the expected namespace and EtcdBackup of encrypted objects (S3Config).
	owner backupcrypt.Binding
}

// NewS3 creates the store. It does not contact the service.
func NewS3(cfg S3Config) (*S3, error) {
	host, secure := "s3.amazonaws.com", true
	if cfg.Endpoint != "" {
		if strings.Contains(cfg.Endpoint, "://") {
			u, err := url.Parse(cfg.Endpoint)
			if err != nil {
				return nil, fmt.Errorf("S3 endpoint %q: %w", cfg.Endpoint, err)
			}
			switch u.Scheme {
			case "http":
				secure = false
			case "https":
			default:
				return nil, fmt.Errorf("S3 endpoint %q: scheme must be http or https", cfg.Endpoint)
			}
			if u.Path != "" && u.Path != "/" {
				return nil, fmt.Errorf("S3 endpoint %q: a path is not supported; give scheme://host[:port]", cfg.Endpoint)
			}
			host = u.Host
		} else {
			host = cfg.Endpoint
		}
	}
	if cfg.Bucket == "" {
		return nil, errors.New("S3 bucket is empty")
	}
	lookup := minio.BucketLookupAuto
	if cfg.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	creds := credentials.NewStaticV4(cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey, cfg.Credentials.SessionToken)
	if cfg.Ambient {
		if cfg.Credentials.AccessKeyID != "" {
			return nil, errors.New("S3 credentials: give either keys or the ambient credentials, not both")
		}
		creds = AmbientCredentials()
	}
	transport := cfg.Transport
	if cfg.Egress != nil {
		if err := cfg.Egress.CheckHost(hostPort(host, secure)); err != nil {
			return nil, err
		}
		base, _ := cfg.Transport.(*http.Transport)
		transport = cfg.Egress.Transport(base)
	}
	if cfg.Limits != nil {
		if transport == nil {
			transport = http.DefaultTransport
		}
		transport = &limitTransport{base: transport, lim: cfg.Limits}
	}
	retries := 0 // minio-go's default (10 attempts)
	if cfg.Limits != nil {
		// The reconcile retries later; an endpoint that fails is not asked ten times.
		retries = 2
	}
	c, err := minio.New(host, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Region:       cfg.Credentials.Region,
		BucketLookup: lookup,
		Transport:    transport,
		MaxRetries:   retries,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", host, err)
	}
	s := &S3{c: c, bucket: cfg.Bucket, partSize: cfg.PartSize, parts: cfg.Parts, key: cfg.Key, lim: cfg.Limits,
		owner: backupcrypt.Binding{Namespace: cfg.Namespace, Backup: cfg.Backup}}
	if s.partSize == 0 {
		s.partSize = DefaultPartSize
	}
	if s.parts == 0 {
		s.parts = DefaultParts
	}
	return s, nil
}

func (s *S3) String() string { return "s3://" + s.bucket }

// hostPort is host with the port an endpoint without one is dialled on.
func hostPort(host string, secure bool) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if secure {
		return net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}

// request bounds a request that moves no object data by Limits.RequestTimeout.
func (s *S3) request(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.lim == nil {
		return context.WithCancel(ctx)
	}
	return withTimeout(ctx, s.lim.RequestTimeout)
}

// transfer watches a transfer of object data (see watchdog); without Limits it does
// nothing.
func (s *S3) transfer(ctx context.Context) (context.Context, *watchdog) {
	if s.lim == nil {
		ctx, cancel := context.WithCancelCause(ctx)
		return ctx, &watchdog{cancel: cancel}
	}
	return newWatchdog(ctx, s.lim)
}

// checksumSuffix names the small object next to each backup that holds the backup's
// SHA-256 (hex), e.g. "etcd.backup.sha256".
const checksumSuffix = ".sha256"

// metaChecksum on a data object says where its checksum is: "sidecar" (the object
// <key>.sha256). Older objects carry the checksum itself in metaSHA256.
const (
	metaChecksum       = "checksum"
	checksumInSidecar  = "sidecar"
	checksumObjectType = "text/plain"
)

// Put uploads the object, then stores the checksum, known only at the end, as the
// small object <key>.sha256. An object whose stored length is known in advance
// (opts.Size, no compression) goes as one streamed PUT of that length: no part buffers,
// no multipart bookkeeping (measured in BenchmarkBackup256MiB: a faster backup, and the
// upload's memory gone); one of unknown length is uploaded in parts, so it still
// streams with bounded memory. The data object is marked as having a sidecar checksum
// from the start, so until the sidecar exists readers refuse it (ErrNoChecksum), and if
// anything fails the data object is removed. (Recording the checksum as metadata would
// need a server-side copy of the whole object onto itself: in BenchmarkBackup256MiB
// that doubled the backup's time.)
func (s *S3) Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (Object, error) {
	if strings.HasSuffix(key, checksumSuffix) {
		return Object{}, fmt.Errorf("invalid backup key %q: %s names checksum objects", key, checksumSuffix)
	}
	bind := s.binding(key, opts.Metadata)
	enc, err := newEncryptingEncoder(r, opts.Compression, s.key, bind)
	if err != nil {
		return Object{}, err
	}
	defer enc.close()
	meta := map[string]string{}
	for k, v := range opts.Metadata {
		meta[k] = v
	}
	if s.key != nil {
		maps.Copy(meta, encryptionMetadata(s.key))
	}
	if opts.Compression != CompressionNone {
		meta[metaCompression] = string(opts.Compression)
	}
	meta[metaChecksum] = checksumInSidecar
	popts := minio.PutObjectOptions{
		UserMetadata: meta,
		ContentType:  "application/octet-stream",
		// No payload hash in the request signature (UNSIGNED-PAYLOAD): over HTTPS
		// minio-go omits it anyway, and over plain HTTP it would sign every chunk
		// (aws-chunked), hashing everything once more on each side (measured: a slower
		// backup on 2 cores). The object's SHA-256, computed here and verified on every
		// read, is what guards the data; TLS guards it in transit where used.
		DisableContentSha256: true,
	}
	ctx, wd := s.transfer(ctx)
	defer wd.stop()
	src := &sourceErr{r: enc}
	var body io.Reader = &watchedReader{r: src, w: wd, ctx: ctx}
	size := s.storedSize(opts, bind)
	if size > 0 {
		enc.expectLength(size)
		popts.DisableMultipart = true
	} else {
		size = -1
		popts.PartSize, popts.NumThreads, popts.ConcurrentStreamParts = s.partSize, s.parts, s.parts > 1
	}
	info, err := s.c.PutObject(ctx, s.bucket, key, body, size, popts)
	if err == nil && size > 0 && enc.n != size {
		// Defence in depth: expectLength already fails such a read.
		err = fmt.Errorf("%w: %d bytes announced, %d read", errLength, size, enc.n)
	}
	if err != nil {
		// Nothing is removed: a failed PUT stored nothing, and one the server took
		// although the stream then failed has no checksum of its own (readers refuse
		// it); removing the key could instead remove an earlier backup there.
		if src.err != nil {
			// Our own side failed (the snapshot stream, its length): say so as it is.
			return Object{}, fmt.Errorf("upload %s/%s: %w", s, key, src.err)
		}
		return Object{}, s.wrap("upload", key, err)
	}
	sum := enc.sum()
	rctx, cancel := s.request(ctx)
	_, err = s.c.PutObject(rctx, s.bucket, key+checksumSuffix, strings.NewReader(sum), int64(len(sum)),
		minio.PutObjectOptions{ContentType: checksumObjectType})
	cancel()
	if err != nil {
		// Leave no object without a checksum behind (best effort, detached from ctx,
		// which may be what ended).
		_ = s.c.RemoveObject(context.WithoutCancel(ctx), s.bucket, key, minio.RemoveObjectOptions{})
		return Object{}, s.wrap("record checksum of", key, err)
	}
	obj := Object{Key: key, Size: enc.n, SHA256: sum, Compression: opts.Compression, Metadata: opts.Metadata, LastModified: info.LastModified}
	if s.key != nil {
		obj.Encryption, obj.KeyFingerprint = meta[metaEncryption], meta[metaEncryptionKey]
	}
	return obj, nil
}

// storedSize is the length of the bytes Put will store for opts, or 0 when it is not
// known in advance (unknown input length, compression) or too large for one PUT.
func (s *S3) storedSize(opts PutOptions, bind backupcrypt.Binding) int64 {
	if opts.Size <= 0 || opts.Compression != CompressionNone {
		return 0
	}
	n := opts.Size
	if s.key != nil {
		n = backupcrypt.EncryptedSize(n, 0, bind)
	}
	if n > MaxSinglePut {
		return 0
	}
	return n
}

// maxChecksumObject bounds the read of a checksum object.
const maxChecksumObject = 1 << 10

// readChecksum reads <key>.sha256.
func (s *S3) readChecksum(ctx context.Context, key string) (string, error) {
	ctx, cancel := s.request(ctx)
	defer cancel()
	o, err := s.c.GetObject(ctx, s.bucket, key+checksumSuffix, minio.GetObjectOptions{})
	if err != nil {
		return "", s.wrap("read checksum of", key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(io.LimitReader(o, maxChecksumObject))
	if err != nil {
		err = s.wrap("read checksum of", key, err)
		if errors.Is(err, ErrNotFound) {
			return "", fmt.Errorf("%s/%s: %w (its checksum object is missing: an unfinished or damaged backup)", s, key, ErrNoChecksum)
		}
		return "", err
	}
	sum := strings.ToLower(strings.TrimSpace(string(b)))
	if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%s/%s%s does not hold a SHA-256", s, key, checksumSuffix)
	}
	return sum, nil
}

// Get opens the object after reading its metadata; see Store.Get.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	sctx, cancel := s.request(ctx)
	st, err := s.c.StatObject(sctx, s.bucket, key, minio.StatObjectOptions{})
	cancel()
	if err != nil {
		return nil, Object{}, s.wrap("read", key, err)
	}
	if s.lim != nil && s.lim.MaxObjectBytes > 0 && st.Size > s.lim.MaxObjectBytes {
		return nil, Object{}, fmt.Errorf("%s/%s: %d stored bytes, more than %d: the backup %w", s, truncName(key), st.Size, s.lim.MaxObjectBytes, ErrLimitExceeded)
	}
	obj := Object{Key: key, Size: st.Size, LastModified: st.LastModified, Metadata: map[string]string{}}
	sidecar := false
	for k, v := range st.UserMetadata {
		switch k = strings.ToLower(k); k {
		case metaSHA256:
			obj.SHA256 = strings.ToLower(v)
		case metaCompression:
			obj.Compression = Compression(v)
		case metaChecksum:
			sidecar = strings.EqualFold(v, checksumInSidecar)
		case metaEncryption:
			obj.Encryption = v
		case metaEncryptionKey:
			obj.KeyFingerprint = strings.ToLower(v)
		default:
			obj.Metadata[k] = v
		}
	}
	if sidecar {
		if obj.SHA256, err = s.readChecksum(ctx, key); err != nil {
			return nil, Object{}, err
		}
	}
	// Pin the version read to the one whose metadata was just read.
	gopts := minio.GetObjectOptions{}
	if err := gopts.SetMatchETag(st.ETag); err != nil {
		return nil, Object{}, err
	}
	// The response body itself, read on the caller's goroutine: minio-go's Object
	// would serve every Read through a goroutine of its own (two channel hand-offs per
	// read of a download that is hundreds of MiB).
	tctx, wd := s.transfer(ctx)
	body, _, _, err := minio.Core{Client: s.c}.GetObject(tctx, s.bucket, key, gopts)
	if err != nil {
		wd.stop()
		return nil, Object{}, s.wrap("read", key, err)
	}
	var stored io.ReadCloser = &s3Body{body, s, key}
	if s.lim != nil {
		stored = &limitedBody{
			Reader: &sizeCap{r: &watchedReader{r: stored, w: wd, ctx: tctx}, max: s.lim.MaxObjectBytes, what: s.String() + "/" + truncName(key)},
			close:  func() error { wd.stop(); return body.Close() },
		}
	} else {
		stored = &limitedBody{Reader: stored, close: func() error { wd.stop(); return body.Close() }}
	}
	rc, err := newDecryptingDecoder(stored, obj, s.String()+"/"+key, s.key, s.lim, s.expect(ctx, key))
	if err != nil {
		return nil, Object{}, err
	}
	return rc, obj, nil
}

// sourceErr remembers the first error of reading what is uploaded (not the endpoint's).
type sourceErr struct {
	r   io.Reader
	err error
}

func (r *sourceErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// limitedBody is an object's body behind the operator's limits.
type limitedBody struct {
	io.Reader
	close func() error
}

func (b *limitedBody) Close() error { return b.close() }

// truncName bounds a tenant's object name in messages.
func truncName(key string) string {
	if len(key) > maxNameInMessage {
		return key[:maxNameInMessage] + "..."
	}
	return key
}

// s3Body maps the errors of reading an object's body to ours.
type s3Body struct {
	io.ReadCloser
	s   *S3
	key string
}

func (b *s3Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.s.wrap("read", b.key, err)
	}
	return n, err
}

// List lists the objects under prefix (all depths).
// With Limits, the listing has a deadline and at most MaxListKeys keys (checksum
// objects included) in at most MaxListPages pages, else it fails with ErrLimitExceeded
// as soon as it passes them.
func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	maxKeys := 0
	var cancel context.CancelFunc
	if s.lim != nil {
		ctx, cancel = withTimeout(ctx, s.lim.ListTimeout)
		ctx = context.WithValue(ctx, listPagesKey{}, &pageCount{max: s.lim.MaxListPages})
		maxKeys = s.lim.MaxListKeys
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	// Cancelling stops minio-go's listing goroutine when we stop early.
	defer cancel()
	n := 0
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, s.wrap("list", prefix, o.Err)
		}
		if n++; maxKeys > 0 && n > maxKeys {
			return nil, fmt.Errorf("list %s/%s: more than %d keys %w", s, truncName(prefix), maxKeys, ErrLimitExceeded)
		}
		if strings.HasSuffix(o.Key, checksumSuffix) {
			continue
		}
		out = append(out, Object{Key: o.Key, Size: o.Size, LastModified: o.LastModified})
	}
	return out, nil
}

// Delete removes the object and its checksum object.
func (s *S3) Delete(ctx context.Context, key string) error {
	for _, k := range []string{key, key + checksumSuffix} {
		rctx, cancel := s.request(ctx)
		err := s.c.RemoveObject(rctx, s.bucket, k, minio.RemoveObjectOptions{})
		cancel()
		if err != nil {
			if errors.Is(s.wrap("delete", k, err), ErrNotFound) {
				continue
			}
			return s.wrap("delete", k, err)
		}
	}
	return nil
}

// wrap names the operation and object and maps S3 error codes to this package's errors.
func (s *S3) wrap(op, key string, err error) error {
	var kind error
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchBucket":
		kind = ErrBucketNotFound
	case "NoSuchKey", "NotFound":
		kind = ErrNotFound
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken":
		kind = ErrAccessDenied
	}
	if kind == nil && minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
		// StatObject answers HEAD requests, whose 404 has no body to name the code.
		kind = ErrNotFound
	}
	// The endpoint is the tenant's: what it answered is reported by class and status,
	// never verbatim (see sanitize).
	return sanitize(op, s.String()+"/"+key, err, kind)
}
