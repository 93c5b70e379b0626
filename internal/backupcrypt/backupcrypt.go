// Package backupcrypt encrypts backup streams on the client side, so that whoever can
// read the bucket cannot read the snapshot (a Kubernetes cluster's etcd holds its
// Secrets). It streams in constant memory and authenticates everything it decrypts.
//
// Format (version 2, written): a header, then chunks.
//
//	header: magic "EOENCv2\n" (8) | chunk size, plaintext bytes, big-endian uint32 (4) |
//	        key fingerprint (8) | salt, random per object (32) |
//	        binding length, big-endian uint32 (4) | binding (at most 4 KiB)
//	binding: namespace, EtcdBackup name and object key, each a big-endian uint32 length
//	        and its bytes, then the etcd revision, big-endian uint64
//	chunk:  AES-256-GCM of up to chunk-size plaintext bytes (+16 bytes tag)
//
// Version 1 (still read, no longer written) is the same without the binding: magic
// "EOENCv1\n" and a 52-byte header.
//
// Each object is sealed with its own key, HKDF-SHA256 of the user's key and the object's
// salt, so nonces never repeat across objects however many are written with one key. A
// chunk's nonce is its index (8 bytes, big-endian), three zero bytes, and 1 on the last
// chunk, else 0; the header is each chunk's additional data. So a reader detects a chunk
// that was changed, dropped, moved or repeated (its index does not match), a stream cut
// at any point (the last chunk read was not sealed as last; an empty input still has an
// empty last chunk), bytes appended after the last chunk, and a header that was changed.
// The binding in the (authenticated) header says where the object belongs: a reader
// that expects another namespace, EtcdBackup, key or revision refuses it before
// decrypting anything (ErrMisplaced), so an object copied to another key or another
// backup's prefix, or an older object put back under a newer one's key, is never taken
// for the backup the reader asked for. A header whose binding was edited to match
// fails authentication on its first chunk.
// The fingerprint in the header tells a wrong key from damage before anything is
// decrypted; it is a one-way function of the key and reveals nothing about it.
package backupcrypt

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// Algorithm names the format written, in an object's metadata; AlgorithmV1 the
// earlier one without a binding, still read.
const (
	Algorithm   = "aes-256-gcm-chunked-v2"
	AlgorithmV1 = "aes-256-gcm-chunked-v1"
)

// DefaultChunkSize is how many plaintext bytes one chunk seals: large enough that the
// 16-byte tag per chunk costs nothing measurable, small enough to keep memory flat.
const DefaultChunkSize = 64 << 10

// Bounds on the chunk size a reader accepts from a header (which it cannot trust before
// the first chunk authenticates it): the upper one bounds the reader's memory.
const (
	minChunkSize = 1 << 10
	maxChunkSize = 1 << 20
)

var (
	magicV1 = [8]byte{'E', 'O', 'E', 'N', 'C', 'v', '1', '\n'}
	magicV2 = [8]byte{'E', 'O', 'E', 'N', 'C', 'v', '2', '\n'}
)

const (
	magicSize       = 8
	saltSize        = 32
	fingerprintSize = 8
	// headerSize is the fixed part of a header (all of a version 1 header).
	headerSize = magicSize + 4 + fingerprintSize + saltSize
	tagSize    = 16
	// maxBinding bounds the binding a reader accepts (names and a key are far shorter).
	maxBinding = 4 << 10
)

// Errors, for errors.Is. None of their messages carries key material.
var (
	// ErrNotEncrypted: the stream does not start with this package's header.
	ErrNotEncrypted = errors.New("not an encrypted backup (no encryption header)")
	// ErrWrongKey: the stream was encrypted with another key.
	ErrWrongKey = errors.New("the backup was encrypted with a different key")
	// ErrCorrupted: a chunk failed authentication or the stream was cut or extended.
	ErrCorrupted = errors.New("encrypted backup is damaged, truncated or tampered with")
	// ErrMisplaced: the object was written for another namespace, EtcdBackup, key or
	// revision than the reader expects: moved, copied or rolled back in the bucket.
	ErrMisplaced = errors.New("the encrypted backup was written for another place or revision (moved, copied or rolled back in the bucket)")
	// ErrUnbound: a version 1 object (no binding) read by a reader that requires one.
	ErrUnbound = errors.New("the encrypted backup carries no binding (format version 1)")
)

// Binding is where an object belongs: written into the authenticated header of every
// object, compared by the reader with what it expects.
type Binding struct {
	// Namespace and Backup name the EtcdBackup that wrote the object (Backup may be
	// empty for a writer that is no EtcdBackup).
	Namespace, Backup string
	// Key is the object's key in its bucket (or its path below a claim).
	Key string
	// Revision is the etcd revision of the snapshot.
	Revision int64
}

func (b Binding) String() string {
	return fmt.Sprintf("namespace %q, backup %q, key %q, revision %d", b.Namespace, b.Backup, b.Key, b.Revision)
}

func (b Binding) encode() ([]byte, error) {
	var out []byte
	for _, f := range []string{b.Namespace, b.Backup, b.Key} {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	out = binary.BigEndian.AppendUint64(out, uint64(b.Revision))
	if len(out) > maxBinding {
		return nil, fmt.Errorf("binding of %d bytes exceeds %d", len(out), maxBinding)
	}
	return out, nil
}

func decodeBinding(p []byte) (Binding, error) {
	var f [3]string
	for i := range f {
		if len(p) < 4 {
			return Binding{}, fmt.Errorf("%w: binding cut short", ErrCorrupted)
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return Binding{}, fmt.Errorf("%w: binding cut short", ErrCorrupted)
		}
		f[i], p = string(p[:n]), p[n:]
	}
	if len(p) != 8 {
		return Binding{}, fmt.Errorf("%w: binding has %d bytes where a revision's 8 belong", ErrCorrupted, len(p))
	}
	return Binding{Namespace: f[0], Backup: f[1], Key: f[2], Revision: int64(binary.BigEndian.Uint64(p))}, nil
}

// Expect is what a reader knows about the object it reads; an empty field (0 for the
// revision) is not checked. Key and Namespace are always known to the operator's readers;
// Backup and Revision when the reader acts for a named EtcdBackup or a pinned backup.
type Expect struct {
	Namespace, Backup, Key string
	Revision               int64
	// AllowV1 accepts a version 1 object (no binding); without it such an object fails
	// with ErrUnbound.
	AllowV1 bool
}

// check compares the object's binding with e, naming the first field that differs.
func (e Expect) check(b Binding) error {
	switch {
	case e.Namespace != "" && b.Namespace != e.Namespace:
		return fmt.Errorf("%w: it belongs to namespace %q, not %q", ErrMisplaced, b.Namespace, e.Namespace)
	case e.Backup != "" && b.Backup != e.Backup:
		return fmt.Errorf("%w: it belongs to EtcdBackup %q, not %q", ErrMisplaced, b.Backup, e.Backup)
	case e.Key != "" && b.Key != e.Key:
		return fmt.Errorf("%w: it was written as key %q, not %q", ErrMisplaced, b.Key, e.Key)
	case e.Revision != 0 && b.Revision != e.Revision:
		return fmt.Errorf("%w: it holds revision %d, not %d", ErrMisplaced, b.Revision, e.Revision)
	}
	return nil
}

// Key is a 256-bit key. Its String and GoString never print the key.
type Key struct{ b [KeySize]byte }

// ParseKey reads a key as a Secret holds it: exactly 32 bytes, or 64 hex digits
// (surrounding whitespace ignored, so a file written by `openssl rand -hex 32` works).
// Errors describe the shape, never the content.
func ParseKey(data []byte) (*Key, error) {
	var k Key
	switch {
	case len(data) == KeySize:
		copy(k.b[:], data)
	case len(bytes.TrimSpace(data)) == 2*KeySize:
		if _, err := hex.Decode(k.b[:], bytes.TrimSpace(data)); err != nil {
			return nil, errors.New("a 64-character key must be hex digits")
		}
	default:
		return nil, fmt.Errorf("a key is %d bytes or %d hex digits, got %d bytes", KeySize, 2*KeySize, len(data))
	}
	// An all-zero key (a Secret created with placeholder bytes, or from /dev/zero) or
	// one byte repeated protects nothing: anyone can guess it.
	if bytes.Count(k.b[:], k.b[:1]) == KeySize {
		return nil, errors.New("the key is one byte repeated (e.g. all zeros): generate a random one, e.g. openssl rand -hex 32")
	}
	return &k, nil
}

// NewKey returns a random key (for tests and tools).
func NewKey() (*Key, error) {
	var k Key
	if _, err := rand.Read(k.b[:]); err != nil {
		return nil, err
	}
	return &k, nil
}

// Fingerprint identifies the key without revealing it: 16 hex digits of an HMAC of a
// fixed text under the key.
func (k Key) Fingerprint() string { return hex.EncodeToString(k.fingerprint()) }

func (k Key) fingerprint() []byte {
	m := hmac.New(sha256.New, k.b[:])
	m.Write([]byte("etcd-operator backup key fingerprint"))
	return m.Sum(nil)[:fingerprintSize]
}

func (k Key) String() string   { return "backupcrypt.Key{fingerprint:" + k.Fingerprint() + "}" }
func (k Key) GoString() string { return k.String() }

// objectAEAD derives the object's key from the user's key and the object's salt (the
// same derivation in both versions: the header, with its version, is each chunk's
// additional data).
func (k *Key) objectAEAD(salt []byte) (cipher.AEAD, error) {
	ok, err := hkdf.Key(sha256.New, k.b[:], salt, "etcd-operator backup "+AlgorithmV1, KeySize)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(ok)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func nonce(index uint64, last bool) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n, index)
	if last {
		n[11] = 1
	}
	return n
}

// encrypter is the reader Encrypt returns.
type encrypter struct {
	src    *bufio.Reader
	aead   cipher.AEAD
	header []byte
	plain  []byte // one chunk of plaintext
	out    []byte // sealed bytes not yet returned
	next   uint64 // index of the next chunk
	done   bool   // the last chunk is sealed
	err    error
}

// EncryptedSize is the length of what Encrypt makes of n plaintext bytes in chunks of
// chunkSize (0: DefaultChunkSize) bound to b: the header, the bytes, and a tag per chunk
// (a stream of whole chunks ends with a full last chunk, an empty one with an empty
// chunk). It lets a store announce the stored length before encrypting (one streamed
// upload).
func EncryptedSize(n int64, chunkSize int, b Binding) int64 {
	if chunkSize == 0 {
		chunkSize = DefaultChunkSize
	}
	enc, _ := b.encode()
	chunks := max(1, (n+int64(chunkSize)-1)/int64(chunkSize))
	return int64(headerSize+4+len(enc)) + n + chunks*tagSize
}

// Encrypt returns a reader of r's bytes encrypted with key in chunks of chunkSize
// plaintext bytes (0: DefaultChunkSize), bound to b (format version 2). It reads r as it
// is read, one chunk ahead at most, so memory stays at about two chunks whatever the
// size of the stream.
func Encrypt(r io.Reader, key *Key, chunkSize int, b Binding) (io.Reader, error) {
	enc, err := b.encode()
	if err != nil {
		return nil, err
	}
	return encrypt(r, key, chunkSize, magicV2, enc)
}

// encrypt writes the header for magic (a binding only in version 2) and the chunks.
func encrypt(r io.Reader, key *Key, chunkSize int, magic [8]byte, binding []byte) (io.Reader, error) {
	if chunkSize == 0 {
		chunkSize = DefaultChunkSize
	}
	if chunkSize < minChunkSize || chunkSize > maxChunkSize {
		return nil, fmt.Errorf("chunk size %d outside [%d, %d]", chunkSize, minChunkSize, maxChunkSize)
	}
	salt := make([]byte, saltSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	header := make([]byte, 0, headerSize+4+len(binding))
	header = append(header, magic[:]...)
	header = binary.BigEndian.AppendUint32(header, uint32(chunkSize))
	header = append(header, key.fingerprint()...)
	header = append(header, salt...)
	if magic == magicV2 {
		header = binary.BigEndian.AppendUint32(header, uint32(len(binding)))
		header = append(header, binding...)
	}
	aead, err := key.objectAEAD(salt)
	if err != nil {
		return nil, err
	}
	return &encrypter{
		src: bufio.NewReaderSize(r, 4096), aead: aead, header: header,
		plain: make([]byte, chunkSize), out: append(make([]byte, 0, chunkSize+tagSize), header...),
	}, nil
}

func (e *encrypter) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		if e.done {
			return 0, io.EOF
		}
		e.sealNext()
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

// sealNext reads one chunk and seals it; it is the last one when the source ends with it
// (peeked, so a stream of whole chunks ends with a full last chunk, and an empty stream
// with an empty one).
func (e *encrypter) sealNext() {
	n, err := io.ReadFull(e.src, e.plain)
	last := false
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		last = true
	case err != nil:
		e.err = err
		return
	default:
		if _, perr := e.src.Peek(1); perr == io.EOF {
			last = true
		} else if perr != nil {
			e.err = perr
			return
		}
	}
	e.out = e.aead.Seal(e.out[:0], nonce(e.next, last), e.plain[:n], e.header)
	e.next++
	e.done = last
}

// decrypter is the reader Decrypt returns.
type decrypter struct {
	src    *bufio.Reader
	aead   cipher.AEAD
	header []byte
	sealed []byte // one sealed chunk
	out    []byte // opened bytes not yet returned
	next   uint64
	done   bool
	err    error
}

// Header is what an encrypted stream's header says.
type Header struct {
	// Version is 1 or 2; Binding is set only in version 2.
	Version     int
	ChunkSize   int
	Fingerprint string
	Binding     *Binding
}

// ReadHeader reads the header at the start of r (consuming it) and returns it with its
// raw bytes (the chunks' additional data).
func ReadHeader(r io.Reader) (Header, []byte, error) {
	h := make([]byte, headerSize)
	if _, err := io.ReadFull(r, h); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return Header{}, nil, ErrNotEncrypted
		}
		return Header{}, nil, err
	}
	var out Header
	switch {
	case bytes.Equal(h[:magicSize], magicV1[:]):
		out.Version = 1
	case bytes.Equal(h[:magicSize], magicV2[:]):
		out.Version = 2
	default:
		return Header{}, nil, ErrNotEncrypted
	}
	size := binary.BigEndian.Uint32(h[magicSize:])
	if size < minChunkSize || size > maxChunkSize {
		return Header{}, nil, fmt.Errorf("%w: chunk size %d in the header is out of bounds", ErrCorrupted, size)
	}
	out.ChunkSize = int(size)
	out.Fingerprint = hex.EncodeToString(h[magicSize+4 : magicSize+4+fingerprintSize])
	if out.Version == 2 {
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return Header{}, nil, fmt.Errorf("%w: header cut short", ErrCorrupted)
		}
		l := binary.BigEndian.Uint32(n[:])
		if l > maxBinding {
			return Header{}, nil, fmt.Errorf("%w: binding of %d bytes in the header is out of bounds", ErrCorrupted, l)
		}
		enc := make([]byte, l)
		if _, err := io.ReadFull(r, enc); err != nil {
			return Header{}, nil, fmt.Errorf("%w: header cut short", ErrCorrupted)
		}
		b, err := decodeBinding(enc)
		if err != nil {
			return Header{}, nil, err
		}
		out.Binding = &b
		h = append(append(h, n[:]...), enc...)
	}
	return out, h, nil
}

// Decrypt reads the header of an encrypted stream and returns a reader of its plaintext
// and the header. It fails at once with ErrNotEncrypted, ErrWrongKey (naming both
// fingerprints), ErrMisplaced (the binding differs from want, naming the field) or
// ErrUnbound (a version 1 object, unless want.AllowV1); the reader fails with
// ErrCorrupted on the first chunk that does not authenticate (a binding edited to pass
// the check fails here), and returns io.EOF only after the chunk sealed as last. Bytes
// are returned only once their chunk authenticated.
func Decrypt(r io.Reader, key *Key, want Expect) (io.Reader, Header, error) {
	h, raw, err := ReadHeader(r)
	if err != nil {
		return nil, h, err
	}
	if fp := key.Fingerprint(); h.Fingerprint != fp {
		return nil, h, fmt.Errorf("%w (the backup's key has fingerprint %s, the key given has %s)", ErrWrongKey, h.Fingerprint, fp)
	}
	switch {
	case h.Binding != nil:
		if err := want.check(*h.Binding); err != nil {
			return nil, h, err
		}
	case !want.AllowV1:
		return nil, h, ErrUnbound
	}
	aead, err := key.objectAEAD(raw[headerSize-saltSize : headerSize])
	if err != nil {
		return nil, h, err
	}
	return &decrypter{
		src: bufio.NewReaderSize(r, 4096), aead: aead, header: raw,
		sealed: make([]byte, h.ChunkSize+tagSize), out: make([]byte, 0, h.ChunkSize),
	}, h, nil
}

func (d *decrypter) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		if d.done {
			return 0, io.EOF
		}
		d.openNext()
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

func (d *decrypter) openNext() {
	n, err := io.ReadFull(d.src, d.sealed)
	last := false
	switch {
	case err == io.EOF:
		d.err = fmt.Errorf("%w: the stream ends before its last chunk", ErrCorrupted)
		return
	case err == io.ErrUnexpectedEOF:
		last = true
	case err != nil:
		d.err = err
		return
	default:
		if _, perr := d.src.Peek(1); perr == io.EOF {
			last = true
		} else if perr != nil {
			d.err = perr
			return
		}
	}
	out, oerr := d.aead.Open(d.out[:0], nonce(d.next, last), d.sealed[:n], d.header)
	if oerr != nil {
		d.err = fmt.Errorf("%w: chunk %d does not authenticate", ErrCorrupted, d.next)
		return
	}
	d.out = out
	d.next++
	d.done = last
}
