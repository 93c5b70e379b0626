// Package backupcrypt encrypts backup streams on the client side, so that whoever can
// read the bucket cannot read the snapshot (a Kubernetes cluster's etcd holds its
// Secrets). It streams in constant memory and authenticates everything it decrypts.
//
// Format (version 1): a 52-byte header, then chunks.
//
//	header: magic "EOENCv1\n" (8) | chunk size, plaintext bytes, big-endian uint32 (4) |
//	        key fingerprint (8) | salt, random per object (32)
//	chunk:  AES-256-GCM of up to chunk-size plaintext bytes (+16 bytes tag)
//
// Each object is sealed with its own key, HKDF-SHA256 of the user's key and the object's
// salt, so nonces never repeat across objects however many are written with one key. A
// chunk's nonce is its index (8 bytes, big-endian), three zero bytes, and 1 on the last
// chunk, else 0; the header is each chunk's additional data. So a reader detects a chunk
// that was changed, dropped, moved or repeated (its index does not match), a stream cut
// at any point (the last chunk read was not sealed as last; an empty input still has an
// empty last chunk), bytes appended after the last chunk, and a header that was changed.
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

// Algorithm names the format in an object's metadata.
const Algorithm = "aes-256-gcm-chunked-v1"

// DefaultChunkSize is how many plaintext bytes one chunk seals: large enough that the
// 16-byte tag per chunk costs nothing measurable, small enough to keep memory flat.
const DefaultChunkSize = 64 << 10

// Bounds on the chunk size a reader accepts from a header (which it cannot trust before
// the first chunk authenticates it): the upper one bounds the reader's memory.
const (
	minChunkSize = 1 << 10
	maxChunkSize = 1 << 20
)

var magic = [8]byte{'E', 'O', 'E', 'N', 'C', 'v', '1', '\n'}

const (
	saltSize        = 32
	fingerprintSize = 8
	headerSize      = len(magic) + 4 + fingerprintSize + saltSize
	tagSize         = 16
)

// Errors, for errors.Is. None of their messages carries key material.
var (
	// ErrNotEncrypted: the stream does not start with this package's header.
	ErrNotEncrypted = errors.New("not an encrypted backup (no encryption header)")
	// ErrWrongKey: the stream was encrypted with another key.
	ErrWrongKey = errors.New("the backup was encrypted with a different key")
	// ErrCorrupted: a chunk failed authentication or the stream was cut or extended.
	ErrCorrupted = errors.New("encrypted backup is damaged, truncated or tampered with")
)

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

// objectAEAD derives the object's key from the user's key and the object's salt.
func (k *Key) objectAEAD(salt []byte) (cipher.AEAD, error) {
	ok, err := hkdf.Key(sha256.New, k.b[:], salt, "etcd-operator backup "+Algorithm, KeySize)
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
// chunkSize (0: DefaultChunkSize): the header, the bytes, and a tag per chunk (a stream
// of whole chunks ends with a full last chunk, an empty one with an empty chunk). It
// lets a store announce the stored length before encrypting (one streamed upload).
func EncryptedSize(n int64, chunkSize int) int64 {
	if chunkSize == 0 {
		chunkSize = DefaultChunkSize
	}
	chunks := max(1, (n+int64(chunkSize)-1)/int64(chunkSize))
	return int64(headerSize) + n + chunks*tagSize
}

// Encrypt returns a reader of r's bytes encrypted with key in chunks of chunkSize
// plaintext bytes (0: DefaultChunkSize). It reads r as it is read, one chunk ahead at
// most, so memory stays at about two chunks whatever the size of the stream.
func Encrypt(r io.Reader, key *Key, chunkSize int) (io.Reader, error) {
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
	header := make([]byte, 0, headerSize)
	header = append(header, magic[:]...)
	header = binary.BigEndian.AppendUint32(header, uint32(chunkSize))
	header = append(header, key.fingerprint()...)
	header = append(header, salt...)
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
	ChunkSize   int
	Fingerprint string
}

// ReadHeader reads the header at the start of r (consuming it).
func ReadHeader(r io.Reader) (Header, []byte, error) {
	h := make([]byte, headerSize)
	if _, err := io.ReadFull(r, h); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return Header{}, nil, ErrNotEncrypted
		}
		return Header{}, nil, err
	}
	if !bytes.Equal(h[:len(magic)], magic[:]) {
		return Header{}, nil, ErrNotEncrypted
	}
	size := binary.BigEndian.Uint32(h[len(magic):])
	if size < minChunkSize || size > maxChunkSize {
		return Header{}, nil, fmt.Errorf("%w: chunk size %d in the header is out of bounds", ErrCorrupted, size)
	}
	fp := h[len(magic)+4 : len(magic)+4+fingerprintSize]
	return Header{ChunkSize: int(size), Fingerprint: hex.EncodeToString(fp)}, h, nil
}

// Decrypt reads the header of an encrypted stream and returns a reader of its plaintext.
// It fails at once with ErrNotEncrypted or ErrWrongKey (naming both fingerprints); the
// reader fails with ErrCorrupted on the first chunk that does not authenticate, and
// returns io.EOF only after the chunk sealed as last. Bytes are returned only once their
// chunk authenticated.
func Decrypt(r io.Reader, key *Key) (io.Reader, error) {
	h, raw, err := ReadHeader(r)
	if err != nil {
		return nil, err
	}
	if want := key.Fingerprint(); h.Fingerprint != want {
		return nil, fmt.Errorf("%w (the backup's key has fingerprint %s, the key given has %s)", ErrWrongKey, h.Fingerprint, want)
	}
	aead, err := key.objectAEAD(raw[headerSize-saltSize:])
	if err != nil {
		return nil, err
	}
	return &decrypter{
		src: bufio.NewReaderSize(r, 4096), aead: aead, header: raw,
		sealed: make([]byte, h.ChunkSize+tagSize), out: make([]byte, 0, h.ChunkSize),
	}, nil
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
