package kubelet

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(ns, name, ip string, ready bool, lbls map[string]string) *v1.Pod {
	st := v1.ConditionFalse
	if ready {
		st = v1.ConditionTrue
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: ip,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: st}},
		},
	}
}

func testSvc(ns, name, clusterIP string, publishNotReady bool, sel map[string]string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{ClusterIP: clusterIP, Selector: sel, PublishNotReadyAddresses: publishNotReady},
	}
}

func TestClusterRecords(t *testing.T) {
	sel := map[string]string{"app": "etcd"}
	m1 := testPod("ns", "m1", "127.1.0.2", true, sel)
	m1.Spec.Hostname, m1.Spec.Subdomain = "m1", "peers"
	m2 := testPod("ns", "m2", "127.1.0.3", false, sel) // not ready
	m2.Spec.Hostname, m2.Spec.Subdomain = "m2", "peers"
	m3 := testPod("ns", "m3", "127.1.0.4", true, sel)
	now := metav1.Now()
	m3.DeletionTimestamp = &now // terminating: not serving
	noIP := testPod("ns", "m4", "", true, sel)
	other := testPod("other", "x", "127.1.0.9", true, sel) // other namespace
	done := testPod("ns", "job", "127.1.0.8", true, sel)
	done.Status.Phase = v1.PodSucceeded

	svcs := []*v1.Service{
		testSvc("ns", "peers", v1.ClusterIPNone, true, sel),      // headless, publishes not-ready
		testSvc("ns", "client", "10.96.0.10", false, sel),        // ClusterIP: pod IPs, never the ClusterIP
		testSvc("ns", "noselector", v1.ClusterIPNone, true, nil), // ignored
	}
	got := clusterRecords([]*v1.Pod{m1, m2, m3, noIP, other, done}, svcs, "cluster.local")
	want := map[string][]string{
		"peers.ns.svc.cluster.local":    {"127.1.0.2", "127.1.0.3", "127.1.0.4"},
		"peers.ns.svc":                  {"127.1.0.2", "127.1.0.3", "127.1.0.4"},
		"peers.ns":                      {"127.1.0.2", "127.1.0.3", "127.1.0.4"},
		"m1.peers.ns.svc.cluster.local": {"127.1.0.2"},
		"m1.peers.ns.svc":               {"127.1.0.2"},
		"m1.peers.ns":                   {"127.1.0.2"},
		"m2.peers.ns.svc.cluster.local": {"127.1.0.3"},
		"m2.peers.ns.svc":               {"127.1.0.3"},
		"m2.peers.ns":                   {"127.1.0.3"},
		"client.ns.svc.cluster.local":   {"127.1.0.2"},
		"client.ns.svc":                 {"127.1.0.2"},
		"client.ns":                     {"127.1.0.2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records:\n got %v\nwant %v", got, want)
	}
	for _, ips := range got {
		for _, ip := range ips {
			if strings.HasPrefix(ip, "10.") {
				t.Fatalf("a ClusterIP leaked into the records: %v", got)
			}
		}
	}

	// Without publishNotReadyAddresses a headless service serves only ready pods, and a
	// pod record needs a headless service named like its subdomain.
	got = clusterRecords([]*v1.Pod{m1, m2}, []*v1.Service{testSvc("ns", "peers", v1.ClusterIPNone, false, sel)}, "example.org")
	if _, ok := got["m2.peers.ns.svc.example.org"]; ok {
		t.Fatalf("not-ready pod published: %v", got)
	}
	if ips := got["m1.peers.ns.svc.example.org"]; len(ips) != 1 {
		t.Fatalf("ready pod missing: %v", got)
	}
	if got := clusterRecords([]*v1.Pod{m1}, nil, "cluster.local"); len(got) != 0 {
		t.Fatalf("pod record without a service: %v", got)
	}
}

func TestRenderHostsAndStaticLines(t *testing.T) {
	prev := strings.Join([]string{
		hostsHeader,
		"127.0.0.1\tlocalhost",
		"::1\tlocalhost ip6-localhost",
		"",
		"127.0.0.1\tapiserver.bench",
		hostsBeginBlock,
		"127.1.0.7\told.ns.svc",
		hostsEndBlock,
	}, "\n") + "\n"
	static := staticHostsLines(prev)
	wantStatic := []string{"127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost", "127.0.0.1\tapiserver.bench"}
	if !reflect.DeepEqual(static, wantStatic) {
		t.Fatalf("static = %q", static)
	}
	out := string(renderHosts(static, map[string][]string{
		"b.ns.svc": {"127.1.0.3", "127.1.0.2"}, // order as given (sorted by clusterRecords)
		"a.ns.svc": {"127.1.0.4"},
	}))
	want := hostsHeader + "\n" +
		"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n127.0.0.1\tapiserver.bench\n" +
		hostsBeginBlock + "\n" +
		"127.1.0.4\ta.ns.svc\n127.1.0.3\tb.ns.svc\n127.1.0.2\tb.ns.svc\n" +
		hostsEndBlock + "\n"
	if out != want {
		t.Fatalf("rendered:\n%s\nwant:\n%s", out, want)
	}
	// Re-rendering our own output is stable.
	if again := string(renderHosts(staticHostsLines(out), map[string][]string{"a.ns.svc": {"127.1.0.4"}, "b.ns.svc": {"127.1.0.3", "127.1.0.2"}})); again != out {
		t.Fatalf("not idempotent:\n%s", again)
	}
	// An empty file still gets localhost.
	if out := string(renderHosts(nil, nil)); !strings.Contains(out, "127.0.0.1\tlocalhost\n") {
		t.Fatalf("no localhost line:\n%s", out)
	}
}

func TestWriteInPlaceKeepsInode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	ino := func() uint64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	before := ino()
	if err := writeInPlace(p, []byte("short\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "short\n" || ino() != before {
		t.Fatalf("content %q, inode %d -> %d", got, before, ino())
	}
}

func TestDNSDelay(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := newDNSManager(p, "cluster.local", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	d.delay("m1.peers.ns.svc", 10*time.Second)
	t0 := time.Now()
	recs := func() map[string][]string {
		return map[string][]string{"m1.peers.ns.svc": {"127.1.0.2"}, "m2.peers.ns.svc": {"127.1.0.3"}}
	}
	r := recs()
	next := d.filterDelayed(r, t0)
	if _, ok := r["m1.peers.ns.svc"]; ok || next != 10*time.Second {
		t.Fatalf("delayed record shown or wrong wake-up: %v next=%v", r, next)
	}
	if _, ok := r["m2.peers.ns.svc"]; !ok {
		t.Fatalf("undelayed record withheld")
	}
	r = recs()
	if next := d.filterDelayed(r, t0.Add(4*time.Second)); next != 6*time.Second || len(r) != 1 {
		t.Fatalf("at +4s: %v next=%v", r, next)
	}
	r = recs()
	if next := d.filterDelayed(r, t0.Add(10*time.Second)); next != 0 || len(r) != 2 {
		t.Fatalf("at +10s: %v next=%v", r, next)
	}
	// The delay was served once; it does not come back.
	r = recs()
	if d.filterDelayed(r, t0.Add(11*time.Second)); len(r) != 2 {
		t.Fatalf("delay applied twice: %v", r)
	}
}

func TestDNSSuffixDelayOnlyNewRecords(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := newDNSManager(p, "cluster.local", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	d.published["old.peers.ns.svc"] = true // written before the delay was asked for
	d.delay("*.peers.ns.svc", 5*time.Second)
	t0 := time.Now()
	recs := func() map[string][]string {
		return map[string][]string{
			"old.peers.ns.svc":    {"127.1.0.2"},
			"new.peers.ns.svc":    {"127.1.0.3"},
			"other.elsewhere.svc": {"127.1.0.4"},
		}
	}
	r := recs()
	if next := d.filterDelayed(r, t0); next != 5*time.Second {
		t.Fatalf("wake-up %v, want 5s", next)
	}
	if _, ok := r["new.peers.ns.svc"]; ok {
		t.Errorf("new record under the suffix was published at once")
	}
	if _, ok := r["old.peers.ns.svc"]; !ok {
		t.Errorf("an already published record was withdrawn")
	}
	if _, ok := r["other.elsewhere.svc"]; !ok {
		t.Errorf("a record outside the suffix was withheld")
	}
	r = recs()
	if d.filterDelayed(r, t0.Add(5*time.Second)); len(r) != 3 {
		t.Fatalf("after the delay: %v", r)
	}
}
