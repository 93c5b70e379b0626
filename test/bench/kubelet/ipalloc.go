package kubelet

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// ipAllocator hands out pod IPs under a 127.x prefix. All of 127.0.0.0/8 is routed to lo,
// so an address needs no assignment before a process can bind it. Allocation is round
// robin: a released IP is reused only after the rest of the range, so a stale DNS record
// or connection to a deleted pod does not reach its successor.
type ipAllocator struct {
	mu     sync.Mutex
	fixed  []int // the prefix's octets
	size   int   // number of addresses in the range (256^free octets)
	cursor int   // next index to try
	used   map[int]string
}

func newIPAllocator(prefix string) (*ipAllocator, error) {
	p := strings.TrimSuffix(prefix, ".")
	parts := strings.Split(p, ".")
	if len(parts) < 1 || len(parts) > 3 || parts[0] != "127" {
		return nil, fmt.Errorf("pod IP prefix %q: want 1 to 3 octets starting with 127", prefix)
	}
	a := &ipAllocator{used: map[int]string{}, size: 1, cursor: 2}
	for _, s := range parts {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 255 {
			return nil, fmt.Errorf("pod IP prefix %q: bad octet %q", prefix, s)
		}
		a.fixed = append(a.fixed, n)
	}
	for i := len(parts); i < 4; i++ {
		a.size *= 256
	}
	return a, nil
}

func (a *ipAllocator) format(idx int) string {
	oct := append([]int(nil), a.fixed...)
	free := 4 - len(a.fixed)
	tail := make([]int, free)
	for i := free - 1; i >= 0; i-- {
		tail[i] = idx % 256
		idx /= 256
	}
	oct = append(oct, tail...)
	return fmt.Sprintf("%d.%d.%d.%d", oct[0], oct[1], oct[2], oct[3])
}

// usable skips .0 and .255 last octets (and .1 of the first /24, kept for a gateway-like
// address the bench may use), so addresses look like ordinary host addresses.
func (a *ipAllocator) usable(idx int) bool {
	last := idx % 256
	return last != 0 && last != 255 && idx != 1
}

// allocate returns a free IP and records owner for it.
func (a *ipAllocator) allocate(owner string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n := 0; n < a.size; n++ {
		idx := (a.cursor + n) % a.size
		if !a.usable(idx) {
			continue
		}
		if _, taken := a.used[idx]; taken {
			continue
		}
		a.used[idx] = owner
		a.cursor = (idx + 1) % a.size
		return a.format(idx), nil
	}
	return "", fmt.Errorf("pod IP range %v exhausted", a.fixed)
}

// release frees ip; unknown IPs are ignored.
func (a *ipAllocator) release(ip string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for idx := range a.used {
		if a.format(idx) == ip {
			delete(a.used, idx)
			return
		}
	}
}
