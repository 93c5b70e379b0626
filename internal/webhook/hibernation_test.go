package webhook_test

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Hibernation's admission through a real API server: size 0 is accepted in both API
// versions only with claims, refused naming spec.size without, and the scale subresource
// (kubectl scale --replicas=0) meets the same rule.
func TestHibernationAdmission(t *testing.T) {
	c := startConversion(t)
	ctx := context.Background()
	if err := autoscalingv1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	const ns = "default"
	claim := &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
	refusedNamingSize := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("size 0 without claims accepted")
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") || !strings.Contains(err.Error(), "persistentVolumeClaimSpec") {
			t.Errorf("want an Invalid error naming spec.size and the claims, got %v", err)
		}
	}

	t.Run("v1 size 0 without claims is refused", func(t *testing.T) {
		err := c.Create(ctx, &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "v1-noclaims", Namespace: ns},
			Spec: etcdv1.EtcdClusterSpec{Size: 0}})
		refusedNamingSize(t, err)
	})
	t.Run("v1beta2 size 0 without claims is refused", func(t *testing.T) {
		err := c.Create(ctx, &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "b2-noclaims", Namespace: ns},
			Spec: v1beta2.EtcdClusterSpec{Size: 0, Pod: &v1beta2.PodPolicy{}}})
		refusedNamingSize(t, err)
	})
	t.Run("size 0 with claims is accepted in both versions", func(t *testing.T) {
		if err := c.Create(ctx, &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "v1-claims", Namespace: ns},
			Spec: etcdv1.EtcdClusterSpec{Size: 0, Pod: &etcdv1.PodPolicy{PersistentVolumeClaimSpec: claim.DeepCopy()}}}); err != nil {
			t.Errorf("v1: %v", err)
		}
		if err := c.Create(ctx, &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "b2-claims", Namespace: ns},
			Spec: v1beta2.EtcdClusterSpec{Size: 0, Pod: &v1beta2.PodPolicy{PersistentVolumeClaimSpec: claim.DeepCopy()}}}); err != nil {
			t.Errorf("v1beta2: %v", err)
		}
		var back v1beta2.EtcdCluster
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "v1-claims"}, &back); err != nil || back.Spec.Size != 0 {
			t.Errorf("v1 size 0 read back as v1beta2: size %d (%v)", back.Spec.Size, err)
		}
	})
	t.Run("the claims cannot be dropped while hibernated", func(t *testing.T) {
		var e etcdv1.EtcdCluster
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "v1-claims"}, &e); err != nil {
			t.Fatal(err)
		}
		e.Spec.Pod.PersistentVolumeClaimSpec = nil
		refusedNamingSize(t, c.Update(ctx, &e))
	})
	t.Run("the scale subresource meets the same rule", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			claims bool
		}{{"scale-claims", true}, {"scale-noclaims", false}} {
			e := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns}, Spec: etcdv1.EtcdClusterSpec{Size: 3}}
			if tc.claims {
				e.Spec.Pod = &etcdv1.PodPolicy{PersistentVolumeClaimSpec: claim.DeepCopy()}
			}
			if err := c.Create(ctx, e); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			scale := &autoscalingv1.Scale{}
			if err := c.SubResource("scale").Get(ctx, e, scale); err != nil {
				t.Fatalf("%s: get scale: %v", tc.name, err)
			}
			scale.Spec.Replicas = 0
			err := c.SubResource("scale").Update(ctx, e, client.WithSubResourceBody(scale))
			if !tc.claims {
				refusedNamingSize(t, err)
				continue
			}
			if err != nil {
				t.Fatalf("%s: scale to 0: %v", tc.name, err)
			}
			var back etcdv1.EtcdCluster
			if err := c.Get(ctx, client.ObjectKeyFromObject(e), &back); err != nil || back.Spec.Size != 0 {
				t.Errorf("%s: size after scale to 0: %d (%v)", tc.name, back.Spec.Size, err)
			}
		}
	})
}
