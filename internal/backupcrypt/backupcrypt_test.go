package backupcrypt

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

const testChunk = minChunkSize

func mustKey(t testing.TB) *Key {
	t.Helper()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encrypt(t testing.TB, plain []byte, k *Key) []byte {
	t.Helper()
	r, err := Encrypt(bytes.NewReader(plain), k, testChunk)
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
	r, err := Decrypt(bytes.NewReader(sealed), k)
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
			sealed := encrypt(t, plain, k)
			chunks := n/testChunk + 1 // a whole number of chunks still ends with a full last chunk, not an empty one...
			if n > 0 && n%testChunk == 0 {
				chunks = n / testChunk // ...so the size is exact
			}
			if want := headerSize + n + chunks*tagSize; len(sealed) != want {
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
	if bytes.Equal(encrypt(t, plain, k), encrypt(t, plain, k)) {
		t.Fatal("two encryptions of the same bytes are equal: the salt is not random")
	}
}

func TestDamageIsDetected(t *testing.T) {
	k := mustKey(t)
	plain := random(t, 3*testChunk+100)
	sealed := encrypt(t, plain, k)
	chunk := testChunk + tagSize
	first := headerSize
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
		{"header only", sealed[:headerSize], ErrCorrupted},
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
		{"chunk size changed", flip(len(magic) + 2), ErrCorrupted},
		{"fingerprint changed", flip(len(magic) + 4), ErrWrongKey},
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

func TestWrongKeyNamesBothFingerprints(t *testing.T) {
	k, other := mustKey(t), mustKey(t)
	_, err := decrypt(encrypt(t, []byte("snapshot"), k), other)
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
		if _, err := Encrypt(strings.NewReader(""), k, n); err == nil {
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
	seal := func() {
		r, err := Encrypt(bytes.NewReader(plain), k, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
	sealed := encrypt(b, plain, k)
	open := func() {
		r, err := Decrypt(bytes.NewReader(sealed), k)
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
		enc += measure(seal)
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
			r, err := Encrypt(bytes.NewReader(plain), k, chunk)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.Copy(io.Discard, r)
			if err != nil {
				t.Fatal(err)
			}
			if want := EncryptedSize(int64(n), chunk); got != want {
				t.Errorf("chunk %d, %d bytes: Encrypt made %d bytes, EncryptedSize says %d", c, n, got, want)
			}
		}
	}
}
