package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// coreOSMemberPod is a member pod as CoreOS etcd-operator 0.9.4 created it, as far as the
// controller looks at it.
func coreOSMemberPod(t *testing.T, c *etcdv1beta2.EtcdCluster, name string) *corev1.Pod {
	t.Helper()
	p := memberPod(t, c, name, corev1.PodStatus{Phase: corev1.PodRunning})
	delete(p.Annotations, AnnotationSpecFingerprint)
	coreOSShaped(p)
	return p
}

// adoptionObservation is a cluster whose members answered, with the given pods.
func adoptionObservation(pods ...*corev1.Pod) *observation {
	o := &observation{clusterID: 0xc1d, pods: map[string]*corev1.Pod{}}
	o.planner.MembersKnown = true
	for i, p := range pods {
		o.pods[p.Name] = p
		o.planner.Members = append(o.planner.Members, planner.Member{ID: uint64(i + 1), Name: p.Name, Reachable: true})
	}
	return o
}

func TestAdoptionOfACoreOSClusterIsAnnouncedOnce(t *testing.T) {
	c := statusCluster("co", "3.6.16")
	c.Status.Phase = etcdv1beta2.ClusterPhaseRunning // what CoreOS wrote: no bootstrapped, no cluster ID
	f := newClusterFixture(t, nil)
	r, rec := f.r, f.rec
	o := adoptionObservation(coreOSMemberPod(t, c, "co-b4x2kq9wzt"), coreOSMemberPod(t, c, "co-fm7p2dnlrx"))

	r.applySummary(c, o, planner.Summary{Phase: etcdv1beta2.ClusterPhaseRunning}, planner.Action{Kind: planner.Done})
	if !c.Status.Bootstrapped || c.Status.ClusterID != "c1d" {
		t.Errorf("status after adoption: bootstrapped %v, clusterID %q", c.Status.Bootstrapped, c.Status.ClusterID)
	}
	r.applySummary(c, o, planner.Summary{Phase: etcdv1beta2.ClusterPhaseRunning}, planner.Action{Kind: planner.Done})

	var adopted []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, etcdv1beta2.EventReasonAdoptedCoreOSCluster) {
			adopted = append(adopted, e)
		}
	}
	if len(adopted) != 1 || !strings.Contains(adopted[0], "c1d") || !strings.Contains(adopted[0], "co-b4x2kq9wzt, co-fm7p2dnlrx") {
		t.Errorf("adoption events %q, want one naming the cluster ID and the members", adopted)
	}
}

func TestNoAdoptionAnnouncedWithoutCoreOSPodsOrAMemberList(t *testing.T) {
	c := statusCluster("own", "3.6.16")
	for name, o := range map[string]*observation{
		"our own pods": adoptionObservation(createdPod(t, c, "own-a")),
		"no member list yet": func() *observation {
			o := adoptionObservation(coreOSMemberPod(t, c, "own-b4x2kq9wzt"))
			o.planner.MembersKnown, o.planner.Members = false, nil
			return o
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			cl := c.DeepCopy()
			f := newClusterFixture(t, nil)
			r, rec := f.r, f.rec
			r.applySummary(cl, o, planner.Summary{Phase: etcdv1beta2.ClusterPhaseRunning}, planner.Action{Kind: planner.Done})
			for len(rec.Events) > 0 {
				if e := <-rec.Events; strings.Contains(e, etcdv1beta2.EventReasonAdoptedCoreOSCluster) {
					t.Errorf("unexpected %q", e)
				}
			}
		})
	}
}
