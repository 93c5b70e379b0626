package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// TestReconcilePausedInvalidSpecDialsNothing: a paused cluster stored before the CRD's
// pattern for spec.pod.ClusterDomain existed, with a domain pointing the member names at
// an address of the tenant's choosing, is refused (InvalidSpec naming the field) before
// anything is dialled: no etcd client is made for it, while paused or not.
func TestReconcilePausedInvalidSpecDialsNothing(t *testing.T) {
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default", UID: "uid-old"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 1, Version: "3.6.16", Paused: true,
			Pod: &etcdv1beta2.PodPolicy{ClusterDomain: "x@127.0.0.1:9#"}},
	}
	yes := true
	member := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "old-0000", Namespace: "default",
			Labels: map[string]string{"app": "etcd", "etcd_cluster": "old"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster",
				Name: "old", UID: "uid-old", Controller: &yes}}},
		Status: corev1.PodStatus{PodIP: "127.0.0.1"},
	}
	f := newSpecFixture(t, cluster, member)
	got := f.reconcile(t)
	if n := f.r.admins.len(); n != 0 {
		t.Errorf("%d etcd clients made for a cluster whose spec is refused, want none", n)
	}
	if !strings.Contains(got.Status.Reason, "spec.pod.ClusterDomain") {
		t.Errorf("status.reason %q does not name spec.pod.ClusterDomain", got.Status.Reason)
	}
	if !got.Status.ControlPaused {
		t.Error("status.controlPaused not set for a paused cluster")
	}
}
