package etcdcluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// withMemberTLS is c with the member Secrets peer and server (none when both are "").
func withMemberTLS(c *etcdv1beta2.EtcdCluster, peer, server string) *etcdv1beta2.EtcdCluster {
	c = c.DeepCopy()
	c.Spec.TLS = nil
	if peer != "" || server != "" {
		c.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
			Member: &etcdv1beta2.MemberSecret{PeerSecret: peer, ServerSecret: server}, OperatorSecret: "op"}}
	}
	return c
}

// chartPod is member name's pod as the chart renders it for c under domain, owned by c.
func chartPod(t *testing.T, c *etcdv1beta2.EtcdCluster, domain, name string) *corev1.Pod {
	t.Helper()
	rd, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	m := render.Member{Name: name, InitialClusterState: render.StateExisting,
		InitialCluster: render.InitialClusterEntry(c, name, domain)}
	objs, err := rd.Render(render.Input{Cluster: c, ClusterDomain: domain, Members: []render.Member{m}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			p.OwnerReferences = []metav1.OwnerReference{controllerRef(c.UID)}
			p.UID = types.UID("uid-pod-" + name)
			p.Status.PodIP = "10.0.0.1"
			return p
		}
	}
	t.Fatal("no pod rendered")
	return nil
}

func podsByName(ps ...*corev1.Pod) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, p := range ps {
		out[p.Name] = p
	}
	return out
}

// What the running members run on is read off their pods: the Secrets and the domain
// most of them use.
func TestRunningSettingsOf(t *testing.T) {
	base := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-c"}}
	on1, on2 := withMemberTLS(base, "p1", "s1"), withMemberTLS(base, "p2", "s2")
	deleting := func(p *corev1.Pod) *corev1.Pod {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		return p
	}
	coreos := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-0001"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "etcd", Command: []string{"/bin/sh", "-ec", "/usr/local/bin/etcd --data-dir=/var/etcd/data --name=c-0001 --initial-advertise-peer-urls=http://c-0001.c.ns.svc:2380 --listen-peer-urls=http://0.0.0.0:2380"}}}}}
	for _, tc := range []struct {
		name string
		pods map[string]*corev1.Pod
		want runningSettings
		ok   bool
	}{
		{"no pod: nothing to read", nil, runningSettings{}, false},
		{"every pod on one set, under a domain", podsByName(chartPod(t, on1, "old.example", "c-a"), chartPod(t, on1, "old.example", "c-b")),
			runningSettings{peerSecret: "p1", serverSecret: "s1", domain: "old.example", domainKnown: true}, true},
		{"plaintext, no domain", podsByName(chartPod(t, base, "", "c-a")),
			runningSettings{domainKnown: true}, true},
		{"mid-way: what most pods use", podsByName(chartPod(t, on2, "", "c-a"), chartPod(t, on1, "", "c-b"), chartPod(t, on1, "", "c-c")),
			runningSettings{peerSecret: "p1", serverSecret: "s1", domainKnown: true}, true},
		{"a tie: the first by name, whatever the map order", podsByName(chartPod(t, on2, "", "c-a"), chartPod(t, on1, "", "c-b")),
			runningSettings{peerSecret: "p1", serverSecret: "s1", domainKnown: true}, true},
		{"a pod being deleted does not count beside live ones", podsByName(deleting(chartPod(t, on2, "", "c-a")), chartPod(t, on1, "", "c-b")),
			runningSettings{peerSecret: "p1", serverSecret: "s1", domainKnown: true}, true},
		{"only pods being deleted: they still say what ran", podsByName(deleting(chartPod(t, on2, "x.example", "c-a"))),
			runningSettings{peerSecret: "p2", serverSecret: "s2", domain: "x.example", domainKnown: true}, true},
		{"a CoreOS pod's shell command line", podsByName(coreos), runningSettings{domainKnown: true}, true},
		{"a peer URL of another shape: domain unknown", podsByName(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-a"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Args: []string{"--initial-advertise-peer-urls=http://10.0.0.1:2380"}}}}}),
			runningSettings{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := runningSettingsOf(base, tc.pods)
			if got != tc.want || ok != tc.ok {
				t.Errorf("runningSettingsOf = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// A pod created while the spec's TLS or domain change is refused or held runs as the
// members do; otherwise, and with no pod to read from, on the spec.
func TestCreatePodAsRunning(t *testing.T) {
	ctx := context.Background()
	members := []etcdadmin.Member{
		{ID: 1, Name: "c-a", PeerURLs: []string{"https://c-a.c.ns.svc:2380"}},
		{ID: 2, Name: "c-b", PeerURLs: []string{"https://c-b.c.ns.svc:2380"}},
	}
	type result struct{ peer, server, advertise, initial string }
	for _, tc := range []struct {
		name      string
		spec      func(*etcdv1beta2.EtcdCluster)
		running   func(*etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster // what the other pods were rendered from
		domain    string                                                  // and under which domain
		plain     bool                                                    // the members' peer URLs are http
		asRunning bool
		want      result
		wantStale string // a field the new pod must still lack
	}{
		{"unproven rotation: the old Secrets",
			func(c *etcdv1beta2.EtcdCluster) { *c = *withMemberTLS(c, "p2", "s2") },
			func(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster { return withMemberTLS(c, "p1", "s1") }, "", false, true,
			result{"p1", "s1", "https://c-c.c.ns.svc:2380", "https://c-c.c.ns.svc:2380"}, fieldPeerSecret},
		{"proven rotation (not held): the spec's Secrets",
			func(c *etcdv1beta2.EtcdCluster) { *c = *withMemberTLS(c, "p2", "s2") },
			func(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster { return withMemberTLS(c, "p1", "s1") }, "", false, false,
			result{"p2", "s2", "https://c-c.c.ns.svc:2380", "https://c-c.c.ns.svc:2380"}, ""},
		{"TLS to plaintext refused: still TLS",
			func(c *etcdv1beta2.EtcdCluster) {},
			func(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster { return withMemberTLS(c, "p1", "s1") }, "", false, true,
			result{"p1", "s1", "https://c-c.c.ns.svc:2380", "https://c-c.c.ns.svc:2380"}, fieldPeerSecret},
		{"plaintext to TLS refused: still plaintext",
			func(c *etcdv1beta2.EtcdCluster) { *c = *withMemberTLS(c, "p1", "s1") },
			func(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster { return withMemberTLS(c, "", "") }, "", true, true,
			result{"", "", "http://c-c.c.ns.svc:2380", "http://c-c.c.ns.svc:2380"}, fieldServerSecret},
		{"cluster domain held: the members' domain",
			func(c *etcdv1beta2.EtcdCluster) {
				*c = *withMemberTLS(c, "p1", "s1")
				c.Spec.Pod.ClusterDomain = "new.example"
			},
			func(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster {
				c = c.DeepCopy()
				c.Spec.Pod.ClusterDomain = ""
				return c
			}, "old.example", false, true,
			result{"p1", "s1", "https://c-c.c.ns.svc.old.example:2380", "https://c-c.c.ns.svc.old.example:2380"}, fieldClusterDomain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) { withClaims(c); tc.spec(c) })
			run := tc.running(f.cluster)
			var pods []*corev1.Pod
			for _, n := range []string{"c-a", "c-b"} {
				pods = append(pods, chartPod(t, run, tc.domain, n))
			}
			o := f.observed(t)
			o.pods = podsByName(pods...)
			o.members = slices.Clone(members)
			for i := range o.members {
				m := &o.members[i]
				m.PeerURLs = []string{render.PeerURLWithScheme(run, m.Name, tc.domain, map[bool]string{true: "http", false: "https"}[tc.plain])}
			}
			a := planner.Action{Kind: planner.CreatePod, Name: "c-c", ID: 3, Version: "3.7.3", Reason: etcdv1beta2.ReasonRecreatingPod, AsRunning: tc.asRunning}
			if _, err := f.r.act(ctx, f.cluster, o, a); err != nil {
				t.Fatal(err)
			}
			p := f.pod(t, "c-c")
			got := result{render.PodSecretVolume(p, volumePeerTLS), render.PodSecretVolume(p, volumeServerTLS),
				etcdFlag(p, "initial-advertise-peer-urls"), ""}
			for _, e := range strings.Split(etcdFlag(p, "initial-cluster"), ",") {
				if v, ok := strings.CutPrefix(e, "c-c="); ok {
					got.initial = v
				}
			}
			if got != tc.want {
				t.Errorf("new pod: %+v\nwant %+v", got, tc.want)
			}
			stale := staleSpecFields(f.cluster, f.r.ClusterDomain, p, "")
			if tc.wantStale != "" && !slices.Contains(stale, tc.wantStale) {
				t.Errorf("the new pod does not show %s as pending (stale %v): the hold would end with it", tc.wantStale, stale)
			}
			if tc.wantStale == "" && len(stale) > 0 {
				t.Errorf("a pod rendered from the spec is stale: %v", stale)
			}
			said := false
			for len(f.rec.Events) > 0 {
				said = said || strings.Contains(<-f.rec.Events, "running members use")
			}
			if said != tc.asRunning {
				t.Errorf("the event says the pod runs as the members do: %v, want %v", said, tc.asRunning)
			}
		})
	}

	t.Run("no pod left to read from: the spec", func(t *testing.T) {
		f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) { withClaims(c); *c = *withMemberTLS(c, "p2", "s2") })
		o := f.observed(t)
		a := planner.Action{Kind: planner.CreatePod, Name: "c-c", ID: 3, Version: "3.7.3", AsRunning: true}
		if _, err := f.r.act(ctx, f.cluster, o, a); err != nil {
			t.Fatal(err)
		}
		if p := f.pod(t, "c-c"); render.PodSecretVolume(p, volumePeerTLS) != "p2" {
			t.Errorf("mounts %q, want the spec's p2", render.PodSecretVolume(p, volumePeerTLS))
		}
	})
}

// A learner added while a change is held gets a peer URL as the members run.
func TestPeerURLForAsRunning(t *testing.T) {
	c := withMemberTLS(&etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-c"}}, "", "")
	c.Spec.Pod = &etcdv1beta2.PodPolicy{ClusterDomain: "new.example"}
	old := withMemberTLS(c, "p1", "s1")
	old.Spec.Pod.ClusterDomain = ""
	o := &observation{pods: podsByName(chartPod(t, old, "old.example", "c-a"))}
	run, ok := runningSettingsOf(c, o.pods)
	if !ok {
		t.Fatal("nothing read")
	}
	if got, want := peerURLFor(run.base(c, "cluster.local"), o, "c-new"), "https://c-new.c.ns.svc.old.example:2380"; got != want {
		t.Errorf("peer URL %s, want %s", got, want)
	}
	r := &Reconciler{ClusterDomain: "cluster.local"}
	if got, want := peerURLFor(r.specBase(c), o, "c-new"), "http://c-new.c.ns.svc.new.example:2380"; got != want {
		t.Errorf("from the spec: peer URL %s, want %s", got, want)
	}
}
