package etcdcluster

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// How a pod's differences from the current spec are sorted for a rollout.
func TestPodDrift(t *testing.T) {
	created := func() *etcdv1beta2.EtcdCluster {
		c := statusCluster("drift", "3.6.16")
		c.Spec.Size = 3
		c.Spec.Pod = &etcdv1beta2.PodPolicy{Labels: map[string]string{"team": "a"}}
		return c
	}
	for _, tc := range []struct {
		name string
		now  func(c *etcdv1beta2.EtcdCluster)
		want planner.Drift
	}{
		{"unchanged", func(*etcdv1beta2.EtcdCluster) {}, planner.Drift{}},
		{"labels: in place", func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.Labels["team"] = "b" },
			planner.Drift{Fields: []string{"pod.labels"}, Metadata: true}},
		{"annotations: in place", func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.Annotations = map[string]string{"scrape": "true"} },
			planner.Drift{Fields: []string{"pod.annotations"}, Metadata: true}},
		{"resources: a new pod", func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Pod.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, planner.Drift{Fields: []string{"pod.resources"}, NewPod: true}},
		{"repository and labels: a new pod, which gets both", func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Repository = "mirror.example/etcd"
			c.Spec.Pod.Labels["team"] = "b"
		}, planner.Drift{Fields: []string{"repository", "pod.labels"}, NewPod: true, Metadata: true}},
		{"etcd settings: a new pod", func(c *etcdv1beta2.EtcdCluster) {
			c.Annotations = map[string]string{etcdv1beta2.QuotaBackendBytesAnnotation: "4294967296"}
		}, planner.Drift{Fields: []string{etcdv1beta2.QuotaBackendBytesAnnotation}, NewPod: true}},
		{"TLS secrets: left to the planner's TLS rule", func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: "p", ServerSecret: "s"}}}
		}, planner.Drift{Fields: []string{"TLS.static.member.peerSecret", "TLS.static.member.serverSecret"}, TLS: true}},
		{"cluster domain: held", func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.ClusterDomain = "example.org" },
			planner.Drift{Held: []string{"pod.ClusterDomain"}}},
		{"claim spec: not rolled out (only a bootstrap that never formed takes it up)", func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Pod.PersistentVolumeClaimSpec = &corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}
		}, planner.Drift{Claim: true}},
		{"node selector: a new pod", func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.NodeSelector = map[string]string{"zone": "a"} },
			planner.Drift{Fields: []string{"pod.nodeSelector"}, NewPod: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := createdPod(t, created(), "drift-a")
			now := created()
			tc.now(now)
			got := podDrift(now, "", p)
			if !slices.Equal(got.Fields, tc.want.Fields) || got.NewPod != tc.want.NewPod || got.Metadata != tc.want.Metadata ||
				!slices.Equal(got.Held, tc.want.Held) || got.TLS != tc.want.TLS || got.Claim != tc.want.Claim {
				t.Errorf("drift %+v, want %+v", got, tc.want)
			}
		})
	}
}

// PatchPodMetadata puts the spec's labels and annotations on the running pod (same
// UID, nothing deleted), never the operator's own keys, and records them in the pod's
// fingerprint without forgetting what else the pod lacks.
func TestPatchPodMetadataInPlace(t *testing.T) {
	spec := func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod = &etcdv1beta2.PodPolicy{Labels: map[string]string{"team": "a"}}
	}
	created := &etcdv1beta2.EtcdCluster{}
	created.Name, created.Namespace = "c", "ns"
	spec(created)
	p := ownedMemberPod("c-a", "uid-c")
	p.Annotations = map[string]string{render.AnnotationVersion: "3.7.3", "sidecar.example/status": "injected"}
	stampSpecFingerprint(p, created, "")

	f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) {
		spec(c)
		c.Spec.Pod.Labels = map[string]string{"team": "b", "etcd_node": "forged"}
		c.Spec.Pod.Annotations = map[string]string{"scrape": "true", render.AnnotationVersion: "9.9.9", AnnotationSpecFingerprint: "{}"}
		c.Spec.Pod.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")} // needs a new pod
	}, p)
	before := f.pod(t, "c-a")
	if d := podDrift(f.cluster, "", before); !d.Metadata || !d.NewPod {
		t.Fatalf("drift before %+v, want metadata and a new pod", d)
	}
	a := planner.Action{Kind: planner.PatchPodMetadata, Name: "c-a", ID: 1, Reason: etcdv1beta2.ReasonReconfiguring, Message: "putting pod.labels on pod c-a in place"}
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), a); err != nil {
		t.Fatal(err)
	}
	after := f.pod(t, "c-a")
	if after.UID != before.UID || len(f.deletes) != 0 {
		t.Fatalf("pod replaced or deleted: uid %s -> %s, deletes %v", before.UID, after.UID, f.deletes)
	}
	if after.Labels["team"] != "b" || after.Labels["etcd_node"] != "c-a" {
		t.Errorf("labels %v, want team=b and the operator's etcd_node kept", after.Labels)
	}
	if after.Annotations["scrape"] != "true" || after.Annotations[render.AnnotationVersion] != "3.7.3" ||
		after.Annotations["sidecar.example/status"] != "injected" {
		t.Errorf("annotations %v, want scrape=true, the operator's version and others' keys kept", after.Annotations)
	}
	var fp map[string]string
	if err := json.Unmarshal([]byte(after.Annotations[AnnotationSpecFingerprint]), &fp); err != nil {
		t.Fatalf("fingerprint %q: %v", after.Annotations[AnnotationSpecFingerprint], err)
	}
	if d := podDrift(f.cluster, "", after); d.Metadata || !d.NewPod || !slices.Equal(d.Fields, []string{"pod.resources"}) {
		t.Errorf("drift after %+v, want only pod.resources (a new pod) left", d)
	}
	if e := f.sawEvent(t, corev1.EventTypeNormal, etcdv1beta2.EventReasonPodReconfigured); !strings.Contains(e, a.Message) {
		t.Errorf("event %q, want the plan's message", e)
	}
}

// PatchPodMetadata refuses a pod of the member's name that this cluster does not control.
func TestPatchPodMetadataOnlyOnControlledPods(t *testing.T) {
	f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod = &etcdv1beta2.PodPolicy{Labels: map[string]string{"team": "b"}}
	}, ownedMemberPod("c-a", "uid-other-cluster"))
	before := f.pod(t, "c-a")
	_, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), planner.Action{Kind: planner.PatchPodMetadata, Name: "c-a"})
	if err == nil || !strings.Contains(err.Error(), "not controlled by") {
		t.Fatalf("err %v, want a refusal", err)
	}
	if after := f.pod(t, "c-a"); after.ResourceVersion != before.ResourceVersion {
		t.Error("a pod the cluster does not control was changed")
	}
	f.warned(t, "not controlled by")
}

// A rollout's DeletePod deletes the drifted pod only, with a UID precondition, and
// keeps its claim for the recreate rule to recreate the pod on.
func TestReconfigureDeletesThePodKeepsTheClaim(t *testing.T) {
	f := newProofFixture(t, withClaims, ownedMemberPod("c-a", "uid-c"), memberClaim("c-a", "uid-c"))
	a := planner.Action{Kind: planner.DeletePod, Name: "c-a", ID: 1, KeepClaim: true, Reason: etcdv1beta2.ReasonReconfiguring,
		Message: "recreating pod c-a on its claim for the new pod.resources"}
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), a); err != nil {
		t.Fatal(err)
	}
	if f.exists(t, &corev1.Pod{}, "c-a") || !f.exists(t, &corev1.PersistentVolumeClaim{}, "c-a") {
		t.Fatal("want the pod deleted and the claim kept")
	}
	if len(f.deletes) != 1 || f.deletes[0].kind != "pod" || f.deletes[0].uid != "uid-c-a" {
		t.Errorf("deletes %+v, want one pod delete with the observed UID as precondition", f.deletes)
	}
}
