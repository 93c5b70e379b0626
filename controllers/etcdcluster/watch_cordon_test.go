package etcdcluster

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Only a flip of spec.unschedulable wakes anything, and it wakes each cluster with a
// member pod on that node once.
func TestCordonWakesClustersOnTheNode(t *testing.T) {
	cordoned := readyNode("n1", cordon)
	if !cordonChanged.Update(event.UpdateEvent{ObjectOld: readyNode("n1"), ObjectNew: cordoned}) ||
		!cordonChanged.Update(event.UpdateEvent{ObjectOld: cordoned, ObjectNew: readyNode("n1")}) {
		t.Error("a cordon or uncordon does not pass")
	}
	if cordonChanged.Update(event.UpdateEvent{ObjectOld: readyNode("n1"), ObjectNew: readyNode("n1", func(n *corev1.Node) { n.Labels["x"] = "y" })}) {
		t.Error("a label change passes")
	}

	other := ownedMemberPod("d-a", "uid-d")
	other.Namespace, other.Labels = "other", render.ClusterLabels("d")
	other.Spec.NodeName = "n1"
	stranger := podOn("x-a", "n1")
	stranger.Labels = map[string]string{render.LabelApp: "web", render.LabelCluster: "x"}
	f := newProofFixture(t, nil, podOn("c-a", "n1"), podOn("c-b", "n1"), podOn("c-c", "n2"), other, stranger)
	got := f.r.clustersOnNode(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	want := map[types.NamespacedName]bool{{Namespace: "ns", Name: "c"}: true, {Namespace: "other", Name: "d"}: true}
	seen := map[types.NamespacedName]bool{}
	for _, r := range got {
		seen[r.NamespacedName] = true
	}
	if len(got) != 2 || !reflect.DeepEqual(seen, want) {
		t.Errorf("requests %v, want one for ns/c and other/d", got)
	}
}
