package backupcrypt

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

const testChunk = minChunkSize

var (
	testBinding = Binding{Namespace: "tenant-a", Backup: "nightly", Key: "nightly_v42_2026-12-05-20:00:00", Revision: 42}
	testExpect  = Expect{Namespace: "tenant-a", Backup: "nightly", Key: "nightly_v42_2026-12-05-20:00:00", Revision: 42}
)

func mustKey(t testing.TB) *Key {
	t.Helper()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func seal(t testing.TB, plain []byte, k *Key) []byte {
	t.Helper()
	r, err := Encrypt(bytes.NewReader(plain), k, testChunk, testBinding)
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func decrypt(sealed []byte, k *Key) ([]byte, error) {
	r, _, err := Decrypt(bytes.NewReader(sealed), k, testExpect)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func random(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	k := mustKey(t)
	for _, n := range []int{0, 1, testChunk - 1, testChunk, testChunk + 1, 2 * testChunk, 3*testChunk + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			plain := random(t, n)
			sealed := seal(t, plain, k)
			chunks := n/testChunk + 1 // a whole number of chunks still ends with a full last chunk, not an empty one...
			if n > 0 && n%testChunk == 0 {
				chunks = n / testChunk // ...so the size is exact
			}
			if want := v2HeaderSize(t) + n + chunks*tagSize; len(sealed) != want {
				t.Errorf("sealed %d bytes, want %d", len(sealed), want)
			}
			if n >= 16 && bytes.Contains(sealed, plain[:16]) {
				t.Error("the plaintext shows in the sealed stream")
			}
			got, err := decrypt(sealed, k)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("round trip changed %d bytes into %d", n, len(got))
			}
		})
	}
}

func TestSameInputSealsDifferently(t *testing.T) {
	k := mustKey(t)
	plain := bytes.Repeat([]byte("etcd"), 1000)
	if bytes.Equal(seal(t, plain, k), seal(t, plain, k)) {
		t.Fatal("two encryptions of the same bytes are equal: the salt is not random")
	}
}

func TestDamageIsDetected(t *testing.T) {
	k := mustKey(t)
	plain := random(t, 3*testChunk+100)
	sealed := seal(t, plain, k)
	chunk := testChunk + tagSize
	first := v2HeaderSize(t)
	swap := func(b []byte, i, j int) []byte {
		out := bytes.Clone(b)
		a, c := out[first+i*chunk:first+(i+1)*chunk], out[first+j*chunk:first+(j+1)*chunk]
		tmp := bytes.Clone(a)
		copy(a, c)
		copy(c, tmp)
		return out
	}
	flip := func(i int) []byte {
		out := bytes.Clone(sealed)
		out[i] ^= 0x01
		return out
	}
	for _, tc := range []struct {
		name   string
		sealed []byte
		want   error
	}{
		{"empty", nil, ErrNotEncrypted},
		{"header cut", sealed[:headerSize-1], ErrNotEncrypted},
		{"plain snapshot", plain, ErrNotEncrypted},
		{"header only", sealed[:first], ErrCorrupted},
		{"binding cut", sealed[:first-3], ErrCorrupted},
		{"cut at a chunk boundary", sealed[:first+2*chunk], ErrCorrupted},
		{"cut inside a chunk", sealed[:first+chunk+10], ErrCorrupted},
		{"last byte missing", sealed[:len(sealed)-1], ErrCorrupted},
		{"bytes appended", append(bytes.Clone(sealed), 0), ErrCorrupted},
		{"last chunk repeated", append(bytes.Clone(sealed), sealed[first+3*chunk:]...), ErrCorrupted},
		{"chunks reordered", swap(sealed, 0, 1), ErrCorrupted},
		{"chunk dropped", append(bytes.Clone(sealed[:first+chunk]), sealed[first+2*chunk:]...), ErrCorrupted},
		{"flipped byte in a chunk", flip(first + chunk + 5), ErrCorrupted},
		{"flipped byte in a tag", flip(first + chunk - 1), ErrCorrupted},
		{"flipped byte in the salt", flip(headerSize - 1), ErrCorrupted},
		{"chunk size changed", flip(magicSize + 2), ErrCorrupted},
		{"fingerprint changed", flip(magicSize + 4), ErrWrongKey},
		{"revision in the binding changed", flip(first - 1), ErrMisplaced},
		{"binding length changed", flip(headerSize + 3), ErrCorrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decrypt(tc.sealed, k)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if !bytes.HasPrefix(plain, got) {
				t.Errorf("returned %d bytes that are not the plaintext's start", len(got))
			}
		})
	}
}

// v2HeaderSize is the header's length with testBinding.
func v2HeaderSize(t testing.TB) int {
	enc, err := testBinding.encode()
	if err != nil {
		t.Fatal(err)
	}
	return headerSize + 4 + len(enc)
}

// TestBindingRefusesMisplacedObjects: an object read as another namespace's, another
// EtcdBackup's, under another key or as another revision (an older object put back in
// place of a newer one) is refused before anything is decrypted, naming what differs;
// a binding edited to match what the reader expects fails authentication.
func TestBindingRefusesMisplacedObjects(t *testing.T) {
	k := mustKey(t)
	plain := random(t, 2*testChunk+5)
	sealed := seal(t, plain, k)
	open := func(want Expect, b []byte) ([]byte, error) {
		r, _, err := Decrypt(bytes.NewReader(b), k, want)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	}
	other := func(f func(*Expect)) Expect { e := testExpect; f(&e); return e }
	for _, tc := range []struct {
		name, says string
		want       Expect
	}{
		{"another namespace", `namespace "tenant-a", not "tenant-b"`, other(func(e *Expect) { e.Namespace = "tenant-b" })},
		{"another backup", `EtcdBackup "nightly", not "hourly"`, other(func(e *Expect) { e.Backup = "hourly" })},
		{"another key", `key "nightly_v42_2026-12-05-20:00:00", not "hourly/copy"`, other(func(e *Expect) { e.Key = "hourly/copy" })},
		{"rolled back", "revision 42, not 57", other(func(e *Expect) { e.Revision = 57 })},
	} {
		got, err := open(tc.want, sealed)
		if !errors.Is(err, ErrMisplaced) || !strings.Contains(err.Error(), tc.says) || got != nil {
			t.Errorf("%s: error %v, want ErrMisplaced saying %s", tc.name, err, tc.says)
		}
	}
	// Fields the reader does not know are not checked.
	if got, err := open(Expect{Namespace: "tenant-a", Key: testBinding.Key}, sealed); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("namespace and key only: %v", err)
	}
	// Someone who may write the bucket rewrites the binding to pass the check: the
	// header is the chunks' additional data, so the first chunk fails.
	moved := Binding{Namespace: "tenant-a", Backup: "nightly", Key: "elsewhere", Revision: 42}
	enc, _ := moved.encode()
	oldEnc, _ := testBinding.encode()
	forged := append(append(append(bytes.Clone(sealed[:headerSize]), byte(0), byte(0), byte(len(enc)>>8), byte(len(enc))), enc...), sealed[headerSize+4+len(oldEnc):]...)
	got, err := open(other(func(e *Expect) { e.Key = "elsewhere" }), forged)
	if !errors.Is(err, ErrCorrupted) || len(got) != 0 {
		t.Errorf("forged binding: error %v and %d bytes, want ErrCorrupted and none", err, len(got))
	}
}

// TestVersion1StillDecrypts reads testdata/v1.enc, written by the version 1 encoder
// (before bindings) with key 00 01 .. 1f and chunk size 1024: it decrypts when the reader
// allows version 1, and is ErrUnbound when it does not.
func TestVersion1StillDecrypts(t *testing.T) {
	v1, err := os.ReadFile("testdata/v1.enc")
	if err != nil {
		t.Fatal(err)
	}
	kb := make([]byte, KeySize)
	for i := range kb {
		kb[i] = byte(i)
	}
	k, err := ParseKey(kb)
	if err != nil {
		t.Fatal(err)
	}
	r, h, err := Decrypt(bytes.NewReader(v1), k, Expect{Namespace: "x", Backup: "y", Key: "z", Revision: 9, AllowV1: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat([]byte("etcd-operator v1 fixture;"), 120); !bytes.Equal(got, want) || h.Version != 1 || h.Binding != nil {
		t.Errorf("version 1 object: %d bytes, header %+v", len(got), h)
	}
	if _, _, err := Decrypt(bytes.NewReader(v1), k, Expect{}); !errors.Is(err, ErrUnbound) {
		t.Errorf("version 1 without AllowV1: error %v, want ErrUnbound", err)
	}
	// A version 1 header cannot be grafted onto a version 2 object (nor the reverse):
	// the magic is part of the additional data.
	sealed := seal(t, []byte("snapshot bytes"), k)
	grafted := append(append(bytes.Clone(magicV1[:]), sealed[magicSize:headerSize]...), sealed[v2HeaderSize(t):]...)
	if _, err := decrypt2(grafted, k, Expect{AllowV1: true}); !errors.Is(err, ErrCorrupted) {
		t.Errorf("v2 object relabelled v1: error %v, want ErrCorrupted", err)
	}
}

func decrypt2(sealed []byte, k *Key, want Expect) ([]byte, error) {
	r, _, err := Decrypt(bytes.NewReader(sealed), k, want)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func TestWrongKeyNamesBothFingerprints(t *testing.T) {
	k, other := mustKey(t), mustKey(t)
	_, err := decrypt(seal(t, []byte("snapshot"), k), other)
	if !errors.Is(err, ErrWrongKey) {
		t.Fatalf("error %v, want ErrWrongKey", err)
	}
	for _, fp := range []string{k.Fingerprint(), other.Fingerprint()} {
		if !strings.Contains(err.Error(), fp) {
			t.Errorf("error %q does not name fingerprint %s", err, fp)
		}
	}
}

func TestParseKey(t *testing.T) {
	raw := random(t, KeySize)
	hexKey := fmt.Sprintf("%x\n", raw)
	a, err := ParseKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseKey([]byte(hexKey))
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("the raw and hex forms of one key differ")
	}
	// A key anyone can guess: all zeros, raw or hex (a placeholder Secret), or one
	// byte repeated.
	guessable := [][]byte{make([]byte, KeySize), []byte(strings.Repeat("00", KeySize) + "\n"), bytes.Repeat([]byte{0xff}, KeySize), []byte(strings.Repeat("ab", KeySize))}
	for _, bad := range append([][]byte{nil, raw[:31], append(bytes.Clone(raw), 0), []byte(strings.Repeat("zz", KeySize))}, guessable...) {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%d bytes) accepted", len(bad))
		} else if len(bad) > 4 && strings.Contains(err.Error(), string(bad[:4])) {
			t.Errorf("error %q shows the key", err)
		}
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	k, err := ParseKey([]byte(strings.Repeat("abcd", KeySize/2)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), fmt.Sprint(*k)} {
		if strings.Contains(s, "abcd") || strings.Contains(s, "171, 205") || strings.Contains(s, "[171") || strings.Contains(s, "171 205") {
			t.Errorf("printed key: %s", s)
		}
	}
}

func TestChunkSizeBounds(t *testing.T) {
	k := mustKey(t)
	for _, n := range []int{minChunkSize - 1, maxChunkSize + 1} {
		if _, err := Encrypt(strings.NewReader(""), k, n, testBinding); err == nil {
			t.Errorf("chunk size %d accepted", n)
		}
	}
}

// BenchmarkEncrypt reports encryption's cost as ratios against the SHA-256 every backup
// computes over the same bytes anyway (the store's checksum), measured in the same run.
func BenchmarkEncrypt(b *testing.B) {
	k := mustKey(b)
	plain := random(b, 64<<20)
	hashPlain := func() {
		h := sha256.New()
		if _, err := io.Copy(h, struct{ io.Reader }{bytes.NewReader(plain)}); err != nil {
			b.Fatal(err)
		}
	}
	sealAll := func() {
		r, err := Encrypt(bytes.NewReader(plain), k, 0, testBinding)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
	sealed := seal(b, plain, k)
	open := func() {
		r, _, err := Decrypt(bytes.NewReader(sealed), k, testExpect)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(plain)))
	var base, enc, dec float64
	for b.Loop() {
		base += measure(hashPlain)
		enc += measure(sealAll)
		dec += measure(open)
	}
	b.ReportMetric(enc/base, "encrypt/sha256")
	b.ReportMetric(dec/base, "decrypt/sha256")
	b.ReportMetric(float64(len(plain))*float64(b.N)/enc/(1<<20), "encryptMiB/s")
}

func measure(f func()) float64 {
	start := time.Now()
	f()
	return time.Since(start).Seconds()
}

// EncryptedSize predicts the exact length Encrypt produces, at and around chunk
// boundaries, for the default chunk size too.
func TestEncryptedSizeMatchesEncrypt(t *testing.T) {
	k := mustKey(t)
	for _, chunk := range []int{testChunk, 0} {
		c := chunk
		if c == 0 {
			c = DefaultChunkSize
		}
		for _, n := range []int{0, 1, c - 1, c, c + 1, 3 * c, 3*c + 7} {
			plain := make([]byte, n)
			r, err := Encrypt(bytes.NewReader(plain), k, chunk, testBinding)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.Copy(io.Discard, r)
			if err != nil {
				t.Fatal(err)
			}
			if want := EncryptedSize(int64(n), chunk, testBinding); got != want {
				t.Errorf("chunk %d, %d bytes: Encrypt made %d bytes, EncryptedSize says %d", c, n, got, want)
			}
		}
	}
}
