//go:build integration

package etcdcluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// The read-only adoption of an old CoreOS cluster whose members answer: status comes from
// etcd's member list and Status answers (members by etcd's names, ready as they answer,
// each one's version, the largest database), still with nothing written but the status.
// The members are real etcd processes; their pods carry the old version CoreOS wrote (no
// 3.4 binary exists here, so the pods' annotation is what makes the cluster old).
func TestTakeoverOfOldCoreOSClusterAsksEtcd(t *testing.T) {
	ec := etcdtest.StartCluster(t, 3, etcdtest.DefaultVersion)
	const name = "oldans"
	c := statusCluster(name, "3.4.35")
	c.Spec.Size = 3
	objs := []client.Object{c}
	for i, m := range ec.Members {
		p := oldCoreOSPod(t, c, name+"-"+string(rune('a'+i)), "3.4.35", true)
		p.Status.PodIP = m.IP
		objs = append(objs, p)
	}
	w := &writeCounter{}
	f := newClusterFixture(t, w.funcs(), objs...)
	f.reconcile(t, name)
	// One member stops: etcd's list still names it, and it is reported unready. The
	// others are ready as they answer a status probe (bounded by 2 s) right after a
	// member left, maybe the leader: on a loaded machine one can miss it, and the next
	// reconcile asks again.
	ec.Members[2].Stop(t)
	poll.Eventually(t, 30*time.Second, 200*time.Millisecond, "m0 and m1 reported ready, m2 unready", func() error {
		f.reconcile(t, name)
		got := f.cluster(t, name)
		if !slices.Equal(got.Status.Members.Ready, []string{"m0", "m1"}) || !slices.Equal(got.Status.Members.Unready, []string{"m2"}) {
			return fmt.Errorf("members ready %v unready %v", got.Status.Members.Ready, got.Status.Members.Unready)
		}
		return nil
	})

	if len(w.writes) != 0 {
		t.Errorf("writes to a read-only adopted cluster: %v", w.writes)
	}
	if n := f.r.admins.len(); n != 1 {
		t.Errorf("%d etcd clients, want the one the members were asked through", n)
	}
	got := f.cluster(t, name)
	if !slices.Equal(got.Status.Members.Ready, []string{"m0", "m1"}) || !slices.Equal(got.Status.Members.Unready, []string{"m2"}) || got.Status.Size != 3 {
		t.Errorf("members ready %v unready %v size %d, want m0 m1 / m2 / 3 (etcd's names)", got.Status.Members.Ready, got.Status.Members.Unready, got.Status.Size)
	}
	if got.Status.CurrentVersion != "3.4.35" {
		t.Errorf("currentVersion %q, want 3.4.35 (the oldest named)", got.Status.CurrentVersion)
	}
	running := strings.TrimPrefix(etcdtest.DefaultVersion, "v")
	versions := map[string]string{}
	for _, d := range got.Status.Members.Details {
		versions[d.Name] = d.Version
	}
	if versions["m0"] != running || versions["m1"] != running {
		t.Errorf("member details %+v, want m0 and m1 at %s as etcd answered", got.Status.Members.Details, running)
	}
	if v := testutil.ToFloat64(clusterDBSize.WithLabelValues("default", name)); v <= 0 {
		t.Errorf("etcd_operator_cluster_db_size_bytes = %v, want the largest database etcd reported", v)
	}
	var avail *etcdv1beta2.ClusterCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == etcdv1beta2.ClusterConditionAvailable {
			avail = &got.Status.Conditions[i]
		}
	}
	if avail == nil || avail.Reason != etcdv1beta2.ReasonUpgradePathRequired || avail.Status != "True" {
		t.Errorf("Available %+v, want True (2 of 3 answer) with reason %s", avail, etcdv1beta2.ReasonUpgradePathRequired)
	}
}
