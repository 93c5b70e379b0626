package etcdcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// The membership steps themselves (add learner, promote, move leader, remove) need a
// live etcd; the end-to-end suites cover them. Without an endpoint they fail touching
// nothing (act_test.go). What they hand a new member is tested here.

// A joining member's --initial-cluster lists every current member once, learners and
// unstarted members (named by their peer URL) included, and itself, sorted by name.
func TestInitialClusterOf(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	r := &Reconciler{ClusterDomain: "cluster.local"}
	members := []etcdadmin.Member{
		{ID: 3, Name: "c-c", PeerURLs: []string{"http://c-c.c.ns.svc.cluster.local:2380"}},
		{ID: 1, PeerURLs: []string{"http://c-a.c.ns.svc.cluster.local:2380"}, IsLearner: true},
		{ID: 4, PeerURLs: []string{"http://10.0.0.4:2380"}}, // no name to recover: left out
		{ID: 5, Name: "c-c"},
	}
	got := initialClusterOf(r.specBase(c), members, "c-b", "")
	want := "c-a=http://c-a.c.ns.svc.cluster.local:2380,c-b=http://c-b.c.ns.svc.cluster.local:2380,c-c=http://c-c.c.ns.svc.cluster.local:2380"
	if got != want {
		t.Errorf("initialClusterOf = %s\nwant %s", got, want)
	}
	if got := initialClusterOf(r.specBase(c), members[:1], "c-c", ""); got != "c-c=http://c-c.c.ns.svc.cluster.local:2380" {
		t.Errorf("self already a member: %s", got)
	}
	// Turning TLS on: the spec says https, members are listed as the membership has
	// them (one already moved), the new member with the scheme it is given.
	tls := c.DeepCopy()
	tls.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: "p", ServerSecret: "s"}}}
	mixed := []etcdadmin.Member{
		{ID: 1, Name: "c-a", PeerURLs: []string{"https://c-a.c.ns.svc.cluster.local:2380"}},
		{ID: 2, Name: "c-c", PeerURLs: []string{"http://c-c.c.ns.svc.cluster.local:2380"}},
	}
	want = "c-a=https://c-a.c.ns.svc.cluster.local:2380,c-b=http://c-b.c.ns.svc.cluster.local:2380,c-c=http://c-c.c.ns.svc.cluster.local:2380"
	if got := initialClusterOf(r.specBase(tls), mixed, "c-b", "http"); got != want {
		t.Errorf("mid-transition: %s\nwant %s", got, want)
	}
}
