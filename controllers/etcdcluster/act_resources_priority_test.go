package etcdcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// Member pods' PriorityClass: without --allowed-priority-classes any class but Kubernetes'
// system- ones; with it, exactly the classes it names (system ones included). A refusal
// names the field and the flag.
func TestCheckPriorityClass(t *testing.T) {
	for _, tc := range []struct {
		name, class string
		allowed     []string
		ok          bool
	}{
		{"none asked", "", nil, true},
		{"none asked, allowlist", "", []string{"gold"}, true},
		{"any tenant class by default", "etcd-high", nil, true},
		{"system class by default", "system-node-critical", nil, false},
		{"system cluster class by default", "system-cluster-critical", nil, false},
		{"listed", "gold", []string{"silver", "gold"}, true},
		{"not listed", "etcd-high", []string{"silver", "gold"}, false},
		{"system class listed", "system-cluster-critical", []string{"system-cluster-critical"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
			if tc.class != "" {
				c.Annotations = map[string]string{etcdv1beta2.PodPriorityClassNameAnnotation: tc.class}
			}
			cl := fake.NewClientBuilder().WithScheme(fixture.Scheme()).Build()
			err := (&Reconciler{Client: cl, PriorityClasses: tc.allowed}).checkPriorityClass(context.Background(), c)
			if (err == nil) != tc.ok {
				t.Fatalf("class %q allowed %v: %v, want allowed %v", tc.class, tc.allowed, err, tc.ok)
			}
			if err != nil && (!strings.Contains(err.Error(), "spec.pod.priorityClassName") || !strings.Contains(err.Error(), "--allowed-priority-classes")) {
				t.Errorf("refusal %q names neither the field nor the flag", err)
			}
		})
	}
}

// A class the cluster's own member pods already run with stays allowed (an operator
// upgrade or a narrowed flag must not fail a running cluster); a pod of that class the
// cluster does not control proves nothing.
func TestCheckPriorityClassKeepsTheRunningClass(t *testing.T) {
	const class = "system-cluster-critical"
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-c",
		Annotations: map[string]string{etcdv1beta2.PodPriorityClassNameAnnotation: class}}}
	pod := func(name string, controlled bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: render.ClusterLabels("c")},
			Spec: corev1.PodSpec{PriorityClassName: class}}
		if controlled {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster",
				Name: "c", UID: "uid-c", Controller: ptr.To(true)}}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []client.Object
		ok   bool
	}{
		{"no pods", nil, false},
		{"a tenant's pod with the class", []client.Object{pod("c-forged", false)}, false},
		{"its own member runs with it", []client.Object{pod("c-0", true)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(tc.pods...).Build()
			err := (&Reconciler{Client: cl}).checkPriorityClass(context.Background(), c)
			if (err == nil) != tc.ok {
				t.Fatalf("%v, want allowed %v", err, tc.ok)
			}
		})
	}
}

// A cluster whose member pods would run with a class the operator may not give is
// reported InvalidSpec naming the field and the flag, and nothing is created.
func TestReconcileRefusesSystemPriorityClass(t *testing.T) {
	s := fixture.Scheme()
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prio", Namespace: "default", UID: "uid-prio",
			Annotations: map[string]string{etcdv1beta2.PodPriorityClassNameAnnotation: "system-node-critical"}},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster).WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).Build()
	r := newTestReconciler(t, Reconciler{Client: c, Scheme: s, Recorder: record.NewFakeRecorder(10), Now: time.Now})
	ctx := context.Background()
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cluster)}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	var got etcdv1beta2.EtcdCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), &got); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cond := range got.Status.Conditions {
		found = found || (cond.Reason == etcdv1beta2.ReasonInvalidSpec && strings.Contains(cond.Message, "spec.pod.priorityClassName") &&
			strings.Contains(cond.Message, "--allowed-priority-classes"))
	}
	if !found {
		t.Errorf("no %s condition naming the field and the flag: %+v", etcdv1beta2.ReasonInvalidSpec, got.Status.Conditions)
	}
	pods, services := podsAndServices(ctx, t, c)
	if len(pods.Items) != 0 || len(services.Items) != 0 {
		t.Errorf("created %d pods and %d services for a refused cluster", len(pods.Items), len(services.Items))
	}
}
