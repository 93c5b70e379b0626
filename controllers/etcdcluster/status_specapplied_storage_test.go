package etcdcluster

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The storage request reaches running members through their claims, so it is no stale
// claim field; the rest of the claim spec still is, for pods of this operator and of
// older ones (fingerprinted on the whole claim spec).
func TestStaleClaimSpecApartFromStorage(t *testing.T) {
	grow := func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod.PersistentVolumeClaimSpec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	}
	classChanged := func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod.PersistentVolumeClaimSpec.StorageClassName = ptr.To("other")
	}
	olderOperator := func(p *corev1.Pod) {
		var fp map[string]string
		if err := json.Unmarshal([]byte(p.Annotations[AnnotationSpecFingerprint]), &fp); err != nil {
			panic(err)
		}
		delete(fp, keyClaimSpecApartFromStorage)
		b, _ := json.Marshal(fp)
		p.Annotations[AnnotationSpecFingerprint] = string(b)
	}
	for _, tc := range []struct {
		name        string
		pod         func(*corev1.Pod)
		now         func(*etcdv1beta2.EtcdCluster)
		createdWith string
		want        []string
	}{
		{name: "storage grown", now: grow},
		{name: "storage and class changed", now: func(c *etcdv1beta2.EtcdCluster) { grow(c); classChanged(c) },
			want: []string{fieldClaimSpec}},
		{name: "claim spec removed", now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.PersistentVolumeClaimSpec = nil },
			want: []string{fieldClaimSpec}},
		{name: "older pod, storage grown, size at creation known", pod: olderOperator, now: grow, createdWith: "1Gi"},
		{name: "older pod, storage grown, size at creation unknown", pod: olderOperator, now: grow, want: []string{fieldClaimSpec}},
		{name: "older pod, class changed", pod: olderOperator, now: classChanged, createdWith: "1Gi", want: []string{fieldClaimSpec}},
		{name: "older pod, unchanged", pod: olderOperator, now: func(*etcdv1beta2.EtcdCluster) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := claimCluster("1Gi")
			p := createdPod(t, c, "store-a")
			if tc.pod != nil {
				tc.pod(p)
			}
			now := claimCluster("1Gi")
			tc.now(now)
			if got := staleSpecFields(now, "", p, tc.createdWith); !slices.Equal(got, tc.want) {
				t.Errorf("stale fields %v, want %v", got, tc.want)
			}
		})
	}
}

// SpecApplied carries the storage step's report: alone, or after the stale pod fields,
// with ExpansionNotAllowed winning over AppliesToNewMembersOnly.
func TestSpecAppliedWithStorage(t *testing.T) {
	c := claimCluster("1Gi")
	pods := map[string]*corev1.Pod{"store-a": createdPod(t, c, "store-a")}
	expanding := &storageReport{Reason: etcdv1beta2.ReasonClaimsExpanding, Message: "expanding member claims: 0 of 1 claims at 2Gi"}
	refused := &storageReport{Reason: etcdv1beta2.ReasonExpansionNotAllowed, Message: `store-a cannot grow to 2Gi: StorageClass "fixed" ...`, EventKey: "fixed"}

	if s := specApplied(c, "", pods, &storageReport{Settled: true}); !s.Status {
		t.Errorf("settled storage: %+v", s)
	}
	s := specApplied(c, "", pods, expanding)
	if s.Status || s.Reason != etcdv1beta2.ReasonClaimsExpanding || s.EventKey != "" || !strings.Contains(s.Message, "0 of 1 claims") {
		t.Errorf("expanding: %+v (no warning event while claims merely grow)", s)
	}
	changed := claimCluster("1Gi")
	changed.Spec.Repository = "mirror.example/etcd"
	s = specApplied(changed, "", pods, expanding)
	// The repository is rolled out (rolling reconfiguration): no warning for it.
	if s.Reason != etcdv1beta2.ReasonRollingOut || !strings.Contains(s.Message, "rolling repository") ||
		!strings.Contains(s.Message, "0 of 1 claims") || s.EventKey != "" {
		t.Errorf("rolled field and expanding: %+v", s)
	}
	s = specApplied(changed, "", pods, refused)
	if s.Reason != etcdv1beta2.ReasonExpansionNotAllowed || !strings.Contains(s.Message, "rolling repository") ||
		!strings.Contains(s.Message, `StorageClass "fixed"`) || s.EventKey != "fixed" {
		t.Errorf("rolled field and refused: %+v", s)
	}
	// The cluster domain is not rolled out: it still applies to new members only.
	kept := claimCluster("1Gi")
	kept.Spec.Pod.ClusterDomain = "example.org"
	s = specApplied(kept, "", pods, expanding)
	if s.Reason != etcdv1beta2.ReasonAppliesToNewMembersOnly || !strings.Contains(s.Message, "pod.ClusterDomain (store-a)") ||
		!strings.Contains(s.Message, "0 of 1 claims") || s.EventKey != "pod.ClusterDomain" {
		t.Errorf("kept field and expanding: %+v", s)
	}
}

// End to end through Reconcile on a fake API server: the cluster's claims are created,
// bound, the spec's storage grows; the claim is expanded, SpecApplied says so without
// calling the claim spec stale, and turns True once the volume has grown.
func TestReconcileExpandsClaims(t *testing.T) {
	c := claimCluster("1Gi")
	c.Spec.Size = 1
	c.Spec.Pod.PersistentVolumeClaimSpec.StorageClassName = ptr.To("grow")
	f := newClusterFixture(t, nil, c, storageClass("grow", ptr.To(true)))
	f.reconcile(t, c.Name) // bootstrap: creates the claim and the pod
	var claims corev1.PersistentVolumeClaimList
	if err := f.c.List(context.Background(), &claims, client.InNamespace("default")); err != nil || len(claims.Items) != 1 {
		t.Fatalf("claims after bootstrap: %d %v", len(claims.Items), err)
	}
	pvc := claims.Items[0]
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	if err := f.c.Status().Update(context.Background(), &pvc); err != nil {
		t.Fatal(err)
	}

	cl := f.cluster(t, c.Name)
	cl.Spec.Pod.PersistentVolumeClaimSpec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	cl.Generation++
	if err := f.c.Update(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, c.Name)
	got := getClaim(t, f.c, pvc.Name)
	if q := got.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
		t.Fatalf("claim request %s, want 2Gi", q.String())
	}
	wantClusterCondition(t, f.cluster(t, c.Name), etcdv1beta2.ClusterConditionSpecApplied, corev1.ConditionFalse,
		etcdv1beta2.ReasonClaimsExpanding, "0 of 1 claims at 2Gi")
	if cond := specAppliedCondition(f.cluster(t, c.Name)); strings.Contains(cond.Message, fieldClaimSpec) {
		t.Errorf("the grown storage request is called a claim change for new members: %q", cond.Message)
	}

	got.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
	if err := f.c.Status().Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, c.Name)
	wantClusterCondition(t, f.cluster(t, c.Name), etcdv1beta2.ClusterConditionSpecApplied, corev1.ConditionTrue, etcdv1beta2.ReasonSpecApplied)
}

func specAppliedCondition(c *etcdv1beta2.EtcdCluster) etcdv1beta2.ClusterCondition {
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionSpecApplied {
			return cond
		}
	}
	return etcdv1beta2.ClusterCondition{}
}
