package operatorimage

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestFromOwnPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op-1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar", Image: "proxy:1"},
			{Name: "manager", Image: "registry.invalid/team/etcd-operator:v9"},
		}},
	}
	c := fake.NewClientBuilder().WithObjects(pod).Build()
	ctx := context.Background()

	if got, err := FromOwnPod(ctx, c, "ops", "op-1", "manager"); err != nil || got != "registry.invalid/team/etcd-operator:v9" {
		t.Errorf("manager container: got %q, %v", got, err)
	}
	if _, err := FromOwnPod(ctx, c, "ops", "op-1", "missing"); err == nil {
		t.Error("no such container in a two-container pod: want an error")
	}
	if _, err := FromOwnPod(ctx, c, "ops", "gone", "manager"); err == nil {
		t.Error("missing pod: want an error")
	}
	if _, err := FromOwnPod(ctx, c, "", "", "manager"); err == nil {
		t.Error("outside a pod: want an error")
	}
}
