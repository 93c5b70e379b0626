package backup

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"
)

// asyncHash hashes exactly the bytes written, in order, whatever the writes' sizes and
// however much the caller reuses its buffer after each write.
func TestAsyncHash(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a := newAsyncHash()
	want := sha256.New()
	buf := make([]byte, 200<<10)
	for range 500 {
		p := buf[:r.IntN(len(buf))]
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		a.Write(p)
		want.Write(p)
		clear(p) // the caller's buffer is reused at once
	}
	if got := a.Sum(); string(got) != string(want.Sum(nil)) {
		t.Fatalf("sum %x, want %x", got, want.Sum(nil))
	}
}

// An upload that fails closes the hash without asking for the sum: its goroutine ends.
func TestAsyncHashCloseEndsGoroutine(t *testing.T) {
	a := newAsyncHash()
	a.Write([]byte("partial"))
	a.close()
	a.close()
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the hashing goroutine did not end after close")
	}
}
