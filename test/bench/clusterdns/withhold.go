package clusterdns

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Withholder makes cluster DNS names unresolvable until a deadline, for the bench's
// DNS fault. It writes zone files into the directory the CoreDNS pod mounts
// (Options.WithholdDir); CoreDNS picks a change up within autoReload (half a second),
// and a withheld name resolves from the API again within that time after its deadline.
// Deadlines are kept by timers in this process, so the Withholder must live as long as
// the faults it injects; Close ends them all.
type Withholder struct {
	dir    string
	domain string

	mu     sync.Mutex
	timers map[string]*time.Timer // by zone
	serial uint32                 // SOA serial of the last zone written
	closed bool
}

// NewWithholder manages withheld names in dir (created if missing) for the cluster
// domain (default DefaultDomain). Zone files left there by an earlier process are
// removed: their deadlines died with it.
func NewWithholder(dir, domain string) (*Withholder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// CoreDNS runs as a non-root user: the mounted directory and its files must be
	// readable by anyone (they hold nothing secret).
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	w := &Withholder{dir: dir, domain: orDefault(domain, DefaultDomain), timers: map[string]*time.Timer{}}
	old, _ := filepath.Glob(filepath.Join(dir, "db.*"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Withhold makes name resolve to no address from now (within half a second) until
// until, then resolve from the API again. name is a name of the cluster domain,
// absolute (m1.c.ns.svc.cluster.local) or as a pod in any namespace would write it
// (m1.c.ns.svc, m1.c.ns: completed as the pods' search path does), or "*." followed by
// such a name for every name below it. A withheld name and the names below it get
// NXDOMAIN. The "*." form also hides the suffix itself (e.g. a headless Service's own
// name): keep lists names at or below it that stay resolvable, with these fixed
// addresses (IPv4 or IPv6), e.g. the members that exist already. Withholding a name
// again replaces its deadline and keep.
func (w *Withholder) Withhold(name string, until time.Time, keep map[string][]string) error {
	zone, err := w.zone(name)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(name, "*.") && len(keep) > 0 {
		return fmt.Errorf("withhold %s: keep applies only to a *. name", name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("withholder closed")
	}
	d := time.Until(until)
	if d <= 0 {
		w.stop(zone)
		return w.remove(zone)
	}
	// The new zone is written before the old deadline is dropped: on an error the
	// earlier withholding stays as it was.
	serial := max(w.serial+1, uint32(time.Now().Unix()))
	text, err := w.zoneFile(zone, keep, serial)
	if err != nil {
		return err
	}
	if err := writeAtomic(w.dir, "db."+zone, text); err != nil {
		return err
	}
	w.serial = serial
	w.stop(zone)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.timers[zone] == t { // not replaced or released meanwhile
			delete(w.timers, zone)
			_ = w.remove(zone)
		}
	})
	w.timers[zone] = t
	return nil
}

// Release ends a withholding before its deadline.
func (w *Withholder) Release(name string) error {
	zone, err := w.zone(name)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stop(zone)
	return w.remove(zone)
}

// stop drops the deadline of zone, if any.
func (w *Withholder) stop(zone string) {
	if t := w.timers[zone]; t != nil {
		t.Stop()
		delete(w.timers, zone)
	}
}

// Withheld lists the zones withheld now (absolute names without the trailing dot).
func (w *Withholder) Withheld() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var zs []string
	for z := range w.timers {
		zs = append(zs, z)
	}
	slices.Sort(zs)
	return zs
}

// Close ends every withholding: names resolve again.
func (w *Withholder) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	var errs []error
	for zone, t := range w.timers {
		t.Stop()
		errs = append(errs, w.remove(zone))
	}
	clear(w.timers)
	return errors.Join(errs...)
}

func (w *Withholder) remove(zone string) error {
	err := os.Remove(filepath.Join(w.dir, "db."+zone))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// zone is the DNS zone that withholds name: the absolute name itself, or for "*.x" the
// absolute form of x.
func (w *Withholder) zone(name string) (string, error) {
	n := strings.ToLower(strings.TrimSuffix(name, "."))
	n = strings.TrimPrefix(n, "*.")
	if n == "" || strings.ContainsAny(n, "/ \t\n*") || strings.Contains(n, "..") || strings.HasPrefix(n, ".") {
		return "", fmt.Errorf("withhold %q: not a DNS name", name)
	}
	return Absolute(n, w.domain), nil
}

// Absolute completes name to an absolute name of the cluster domain (without the trailing
// dot) the way a pod's resolver finds it through its search path: a name under the
// domain or a reverse zone stays, <x>.svc and <x>.pod get the domain, anything else is
// taken as <name>.<namespace> (or <svc>) under svc.<domain>.
func Absolute(name, domain string) string {
	name = strings.TrimSuffix(name, ".")
	switch {
	case name == domain || strings.HasSuffix(name, "."+domain),
		strings.HasSuffix(name, ".in-addr.arpa"), strings.HasSuffix(name, ".ip6.arpa"):
		return name
	case strings.HasSuffix(name, ".svc"), strings.HasSuffix(name, ".pod"):
		return name + "." + domain
	}
	return name + ".svc." + domain
}

// zoneFile is a zone with only its SOA (whose TTLs, including the negative-answer TTL,
// are 1 s) and the kept names' addresses.
func (w *Withholder) zoneFile(zone string, keep map[string][]string, serial uint32) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN %s.\n$TTL %d\n", zone, ttl)
	fmt.Fprintf(&b, "@ IN SOA ns.dns.%s. hostmaster.%s. %d %d %d %d %d\n", w.domain, w.domain, serial, ttl, ttl, ttl, ttl)
	names := make([]string, 0, len(keep))
	for n := range keep {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		abs := Absolute(strings.ToLower(n), w.domain)
		if abs != zone && !strings.HasSuffix(abs, "."+zone) {
			return "", fmt.Errorf("keep %s: not under the withheld %s", n, zone)
		}
		for _, ip := range keep[n] {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return "", fmt.Errorf("keep %s: %w", n, err)
			}
			typ := "A"
			if a.Is6() && !a.Is4In6() {
				typ = "AAAA"
			}
			fmt.Fprintf(&b, "%s. IN %s %s\n", abs, typ, a.Unmap())
		}
	}
	return b.String(), nil
}

// writeAtomic replaces dir/name with text in one rename, so CoreDNS never reads half a
// zone. The temporary name does not match the auto plugin's ^db\. pattern.
func writeAtomic(dir, name, text string) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
