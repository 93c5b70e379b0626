package runtest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// TestRenderedPodsTurnTLSOn runs the member pods the chart renders through the three
// steps of turning TLS on for a running plaintext cluster, each member restarted on its
// data one at a time, as the operator does it (planner/tlsenable.go): the pods of
// step 1 (certificates, http peers, clients both ways), the peer URL update through
// etcd's member update and the pods of step 2 (https peers), then the spec's pods. A
// plaintext client writes through every restart of steps 1 and 2, a TLS client through
// those of step 3; at the end every peer and client URL is https and every key is read
// over TLS.
func TestRenderedPodsTurnTLSOn(t *testing.T) {
	const version = "3.6.16"
	bins := map[string]string{"v" + version: etcdtest.Binary(t, version, "etcd")}
	pn := newPodNetwork(t, 30, ipv4Only)
	plain := &v1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "tlson", Namespace: "default", UID: "uid-tlson"},
		Spec: v1beta2.EtcdClusterSpec{Size: 3, Version: version, Pod: &v1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
	}
	secure := plain.DeepCopy()
	secure.Spec.TLS = &v1beta2.TLSPolicy{Static: &v1beta2.StaticTLS{
		Member: &v1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"}, OperatorSecret: "client"}}
	names := []string{"tlson-0", "tlson-1", "tlson-2"}
	var hosts strings.Builder
	for i, n := range names {
		for _, a := range pn.podAddrs(i) {
			fmt.Fprintf(&hosts, "%s\t%s\n", a, render.MemberHost(plain, n, ""))
		}
	}
	appendHosts(t, hosts.String())
	certs := newTestCerts(t, secure)
	rd, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	renderPod := func(c *v1beta2.EtcdCluster, m render.Member) *corev1.Pod {
		t.Helper()
		objs, err := rd.Render(render.Input{Cluster: c, Members: []render.Member{m}})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				return p
			}
		}
		t.Fatal("no pod rendered")
		return nil
	}
	// A restarted member's --initial-cluster is not read (its data directory exists);
	// it holds the member's own entry, with the scheme it listens on.
	restarted := func(c *v1beta2.EtcdCluster, i int, scheme string, plaintext bool) *corev1.Pod {
		self := scheme
		if self == "" {
			self = render.PeerScheme(c)
		}
		return renderPod(c, render.Member{Name: names[i], InitialClusterState: render.StateExisting, PeerScheme: scheme, ClientPlaintext: plaintext,
			InitialCluster: names[i] + "=" + render.PeerURLWithScheme(c, names[i], "", self)})
	}

	data := make([]string, len(names))
	pods := make([]*runningPod, len(names))
	ic := render.InitialCluster(plain, names, "")
	for i, n := range names {
		data[i] = t.TempDir()
		pods[i] = startPodOn(t, pn, i, renderPod(plain, render.Member{Name: n, InitialClusterState: render.StateNew, InitialCluster: ic}), bins, certs, data[i])
	}
	for _, p := range pods {
		waitProbe(t, p, p.pod.Spec.Containers[0].ReadinessProbe, true, 90*time.Second)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	hcTLS := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: certs.clientConfig}}
	httpURL := func(i int) string { return render.ClientURL(plain, names[i], "") }
	httpsURL := func(i int) string { return render.ClientURL(secure, names[i], "") }
	var written []string
	write := func(cl *http.Client, url string) {
		t.Helper()
		k := fmt.Sprintf("k%03d", len(written))
		put(t, cl, url, k, "v-"+k)
		written = append(written, k)
	}
	restart := func(i int, p *corev1.Pod) {
		t.Helper()
		stopPod(t, pods[i])
		pods[i] = startPodOn(t, pn, i, p, bins, certs, data[i])
		waitProbe(t, pods[i], p.Spec.Containers[0].ReadinessProbe, true, 90*time.Second)
	}
	write(hc, httpURL(0))

	// Step 1: certificates, peers still over http, clients both ways.
	for i := range names {
		restart(i, restarted(secure, i, "http", true))
		write(hc, httpURL((i+1)%3))
		write(hcTLS, httpsURL(i)) // the restarted member serves TLS clients already
	}
	// Step 2: per member, its peer URL to https, then the member listening on https.
	for i := range names {
		id := memberID(t, hc, httpURL((i+1)%3), names[i])
		gateway(t, hc, httpURL((i+1)%3)+"/v3/cluster/member/update",
			map[string]any{"ID": id, "peerURLs": []string{render.PeerURL(secure, names[i], "")}}, nil)
		restart(i, restarted(secure, i, "https", true))
		write(hc, httpURL(i))
	}
	// Step 3: the spec's pods, https only.
	for i := range names {
		restart(i, restarted(secure, i, "", false))
		write(hcTLS, httpsURL(i))
	}

	var list struct {
		Members []struct {
			Name       string   `json:"name"`
			PeerURLs   []string `json:"peerURLs"`
			ClientURLs []string `json:"clientURLs"`
		} `json:"members"`
	}
	// Linearizable: each member publishes its client URLs through the log as it starts,
	// and member 0 may not yet have applied the last restarted member's entry (a
	// serializable list, the gateway's default, is the answering member's own view).
	gateway(t, hcTLS, httpsURL(0)+"/v3/cluster/member/list", map[string]any{"linearizable": true}, &list)
	if len(list.Members) != 3 {
		t.Fatalf("%d members", len(list.Members))
	}
	for _, m := range list.Members {
		for _, u := range append(append([]string{}, m.PeerURLs...), m.ClientURLs...) {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("member %s still has %s", m.Name, u)
			}
		}
	}
	for _, k := range written {
		if got := get(t, hcTLS, httpsURL(2), k); got != "v-"+k {
			t.Errorf("key %s = %q", k, got)
		}
	}
	// Refused, not unanswered: a member that hung would fail a plaintext request too.
	if resp, err := hc.Get(httpURL(0) + "/version"); err == nil {
		resp.Body.Close()
		t.Errorf("plaintext still served after the last step")
	} else if etcdtest.TimedOut(err) {
		t.Errorf("a plaintext request timed out, which tells no refusal from a hung member: %v", err)
	} else {
		t.Logf("plaintext after the last step: %v", err)
	}
	t.Logf("%d writes through 9 restarts and 3 peer URL updates, every one read back over TLS", len(written))
}

// memberID is the member's ID as the gateway prints it (a decimal string).
func memberID(t *testing.T, hc *http.Client, url, name string) string {
	t.Helper()
	var list struct {
		Members []struct {
			ID   string `json:"ID"`
			Name string `json:"name"`
		} `json:"members"`
	}
	gateway(t, hc, url+"/v3/cluster/member/list", map[string]any{}, &list)
	for _, m := range list.Members {
		if m.Name == name {
			return m.ID
		}
	}
	t.Fatalf("no member %s in %+v", name, list.Members)
	return ""
}
