package kubelet

import (
	"bytes"
	"context"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

const (
	hostsHeader     = "# Managed by the etcd-operator bench kubelet: cluster DNS records below are rewritten in place."
	hostsBeginBlock = "# BEGIN bench cluster records"
	hostsEndBlock   = "# END bench cluster records"
)

// endpointReady is the EndpointSlice controller's notion of a serving address: the pod
// has an IP, is not terminal, and is Ready and not terminating, unless the Service
// publishes not-ready addresses.
func endpointReady(pod *v1.Pod, publishNotReady bool) bool {
	if pod.Status.PodIP == "" || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return false
	}
	if publishNotReady {
		return true
	}
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// clusterRecords computes name -> IPs the way cluster DNS would answer them:
//   - a Service with a selector: <svc>.<ns>.svc[.<domain>] (and <svc>.<ns>) -> IPs of its
//     serving pods. ClusterIPs are never used: they are not routable on the bench, so a
//     ClusterIP Service resolves like a headless one.
//   - a pod with hostname and subdomain, selected by a headless Service named like the
//     subdomain: <hostname>.<subdomain>.<ns>.svc[.<domain>] (and without .svc) -> its IP,
//     when it is serving for that Service (publishNotReadyAddresses counts).
func clusterRecords(pods []*v1.Pod, svcs []*v1.Service, domain string) map[string][]string {
	out := map[string][]string{}
	add := func(name, ip string) {
		for _, have := range out[name] {
			if have == ip {
				return
			}
		}
		out[name] = append(out[name], ip)
	}
	names := func(prefix, ns string) []string {
		return []string{prefix + "." + ns + ".svc." + domain, prefix + "." + ns + ".svc", prefix + "." + ns}
	}
	for _, svc := range svcs {
		if svc.Spec.Type == v1.ServiceTypeExternalName || len(svc.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		headless := svc.Spec.ClusterIP == v1.ClusterIPNone
		for _, pod := range pods {
			if pod.Namespace != svc.Namespace || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if !endpointReady(pod, svc.Spec.PublishNotReadyAddresses) {
				continue
			}
			for _, n := range names(svc.Name, svc.Namespace) {
				add(n, pod.Status.PodIP)
			}
			if headless && pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
				for _, n := range names(pod.Spec.Hostname+"."+svc.Name, svc.Namespace) {
					add(n, pod.Status.PodIP)
				}
			}
		}
	}
	for _, ips := range out {
		sort.Strings(ips)
	}
	return out
}

// renderHosts renders the managed hosts file: header, the static lines kept from the file
// as the bench created it (always including localhost), then one "IP name" line per
// record, sorted so that rewrites change as little as possible.
func renderHosts(static []string, records map[string][]string) []byte {
	var b bytes.Buffer
	b.WriteString(hostsHeader + "\n")
	hasLocalhost := false
	for _, l := range static {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "127.0.0.1" {
			for _, n := range f[1:] {
				hasLocalhost = hasLocalhost || n == "localhost"
			}
		}
	}
	if !hasLocalhost {
		b.WriteString("127.0.0.1\tlocalhost\n")
	}
	for _, l := range static {
		b.WriteString(l + "\n")
	}
	b.WriteString(hostsBeginBlock + "\n")
	for _, name := range sortedKeys(records) {
		for _, ip := range records[name] {
			b.WriteString(ip + "\t" + name + "\n")
		}
	}
	b.WriteString(hostsEndBlock + "\n")
	return b.Bytes()
}

// staticHostsLines returns the lines of an existing hosts file that are not ours: a
// previous managed block and header are dropped so a restarted kubelet starts clean.
func staticHostsLines(content string) []string {
	var out []string
	inBlock := false
	for _, l := range strings.Split(content, "\n") {
		switch {
		case l == hostsHeader:
		case l == hostsBeginBlock:
			inBlock = true
		case l == hostsEndBlock:
			inBlock = false
		case inBlock, strings.TrimSpace(l) == "":
		default:
			out = append(out, l)
		}
	}
	return out
}

// dnsManager keeps the hosts file in sync with pods and services.
type dnsManager struct {
	path, domain string
	podLister    corelisters.PodLister
	svcLister    corelisters.ServiceLister
	log          logr.Logger
	kick         chan struct{}

	mu        sync.Mutex
	static    []string
	delays    map[string]time.Duration // hostname -> delay still to apply
	firstSeen map[string]time.Time     // for delayed hostnames: when first eligible
	// suffixDelays delay every record whose name ends in the suffix and that has never
	// been published, e.g. all members a scale-up will add, whose names are not known yet.
	suffixDelays map[string]time.Duration
	published    map[string]bool // names written to the file at least once
	written      []byte
}

func newDNSManager(path, domain string, log logr.Logger) (*dnsManager, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &dnsManager{
		path: path, domain: domain, log: log,
		kick:         make(chan struct{}, 1),
		static:       staticHostsLines(string(raw)),
		delays:       map[string]time.Duration{},
		firstSeen:    map[string]time.Time{},
		suffixDelays: map[string]time.Duration{},
		published:    map[string]bool{},
	}, nil
}

// trigger asks for a re-render (coalesced).
func (d *dnsManager) trigger() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// delay withholds records for hostname for dur after they would first appear. A hostname
// of the form "*.suffix" applies to every not yet published record ending in ".suffix".
func (d *dnsManager) delay(hostname string, dur time.Duration) {
	d.mu.Lock()
	if suffix, ok := strings.CutPrefix(hostname, "*"); ok {
		d.suffixDelays[suffix] = dur
		d.mu.Unlock()
		d.trigger()
		return
	}
	d.delays[hostname] = dur
	delete(d.firstSeen, hostname)
	d.mu.Unlock()
	d.trigger()
}

// filterDelayed drops withheld records and returns when the next one is due.
func (d *dnsManager) filterDelayed(recs map[string][]string, now time.Time) (next time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name := range recs {
		if d.published[name] {
			continue
		}
		if _, ok := d.delays[name]; ok {
			continue
		}
		for suffix, dur := range d.suffixDelays {
			if strings.HasSuffix(name, suffix) {
				d.delays[name] = dur
			}
		}
	}
	for name, dur := range d.delays {
		if _, ok := recs[name]; !ok {
			continue
		}
		first, ok := d.firstSeen[name]
		if !ok {
			first = now
			d.firstSeen[name] = now
		}
		left := first.Add(dur).Sub(now)
		if left <= 0 {
			// Delay served: the record is published from now on.
			delete(d.delays, name)
			delete(d.firstSeen, name)
			continue
		}
		delete(recs, name)
		if next == 0 || left < next {
			next = left
		}
	}
	return next
}

func (d *dnsManager) sync() (time.Duration, error) {
	pods, err := d.podLister.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	svcs, err := d.svcLister.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	recs := clusterRecords(pods, svcs, d.domain)
	next := d.filterDelayed(recs, time.Now())
	d.mu.Lock()
	content := renderHosts(d.static, recs)
	same := bytes.Equal(content, d.written)
	d.mu.Unlock()
	if same {
		return next, nil
	}
	if err := writeInPlace(d.path, content); err != nil {
		return next, err
	}
	d.mu.Lock()
	d.written = content
	for name := range recs {
		d.published[name] = true
	}
	d.mu.Unlock()
	d.log.V(1).Info("hosts file updated", "records", len(recs))
	return next, nil
}

// writeInPlace overwrites the file's content keeping its inode (it is bind-mounted over
// /etc/hosts, and a rename would leave the mount on the old inode). The new content is
// written over the old before truncating, so a concurrent reader never sees an empty file.
func writeInPlace(path string, content []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(content, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(content))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (d *dnsManager) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, err := d.sync()
		if err != nil {
			d.log.Error(err, "hosts file sync failed")
			next = time.Second
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
			// Coalesce bursts of informer events into one write.
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		case <-timer.C:
		}
	}
}
