package etcdcluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

func (f *proofFixture) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// A member's pod created outside a bootstrap joins the existing cluster: its
// --initial-cluster lists every current member (an unstarted one by its peer URL) and
// itself, and it carries the member ID etcd gave it.
func TestCreatePodJoinsTheExistingCluster(t *testing.T) {
	f := newProofFixture(t, withClaims)
	o := f.observed(t)
	o.members = []etcdadmin.Member{
		{ID: 1, Name: "c-a", PeerURLs: []string{"http://c-a.c.ns.svc:2380"}},
		{ID: 2, PeerURLs: []string{"http://c-b.c.ns.svc:2380"}},
	}
	if _, err := f.r.act(context.Background(), f.cluster, o, planner.Action{Kind: planner.CreatePod, Name: "c-d", ID: 4, Version: "3.7.3"}); err != nil {
		t.Fatal(err)
	}
	p := f.pod(t, "c-d")
	if s := etcdFlag(p, "initial-cluster-state"); s != render.StateExisting {
		t.Errorf("--initial-cluster-state=%s, want %s", s, render.StateExisting)
	}
	want := "c-a=http://c-a.c.ns.svc:2380,c-b=http://c-b.c.ns.svc:2380,c-d=http://c-d.c.ns.svc:2380"
	if ic := etcdFlag(p, "initial-cluster"); ic != want {
		t.Errorf("--initial-cluster=%s, want %s", ic, want)
	}
	if id := p.Annotations[render.AnnotationMemberID]; id != etcdadmin.FormatID(4) {
		t.Errorf("member ID annotation %q, want %q", id, etcdadmin.FormatID(4))
	}
	if !f.exists(t, &corev1.PersistentVolumeClaim{}, "c-d") {
		t.Error("no claim created for the member")
	}
	f.sawEvent(t, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberPodCreated)
}

// A pod missing from a bootstrap that has not formed yet is created as part of the
// recorded initial cluster; once the cluster formed, the same name joins it instead.
func TestCreatePodOfAnInterruptedBootstrap(t *testing.T) {
	initial := []string{"c-a", "c-b", "c-c"}
	for _, bootstrapped := range []bool{false, true} {
		f := newProofFixture(t, nil)
		f.cluster.Status.BootstrapMembers = initial
		f.cluster.Status.Bootstrapped = bootstrapped
		if _, err := f.r.act(context.Background(), f.cluster, f.observed(t), planner.Action{Kind: planner.CreatePod, Name: "c-b", Version: "3.7.3"}); err != nil {
			t.Fatal(err)
		}
		p := f.pod(t, "c-b")
		state, ic := etcdFlag(p, "initial-cluster-state"), etcdFlag(p, "initial-cluster")
		switch {
		case !bootstrapped && (state != render.StateNew || ic != render.InitialCluster(f.cluster, initial, "")):
			t.Errorf("not bootstrapped: state %s, initial cluster %s; want the recorded bootstrap", state, ic)
		case bootstrapped && (state != render.StateExisting || ic != "c-b=http://c-b.c.ns.svc:2380"):
			t.Errorf("bootstrapped: state %s, initial cluster %s; want to join", state, ic)
		}
	}
}

// A member whose claim survived gets its pod back under the same name; the claim that
// is already there is no error, and the event says what the plan said.
func TestCreatePodRecreatesOnTheClaim(t *testing.T) {
	f := newProofFixture(t, withClaims, memberClaim("c-a", "uid-c"))
	a := planner.Action{Kind: planner.CreatePod, Name: "c-a", Version: "3.7.3", Reason: etcdv1beta2.ReasonRecreatingPod, Message: "pod c-a of member c-a is gone; its claim stays"}
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t), a); err != nil {
		t.Fatal(err)
	}
	f.pod(t, "c-a")
	if e := f.sawEvent(t, corev1.EventTypeNormal, etcdv1beta2.EventReasonPodRecreated); !strings.Contains(e, a.Message) {
		t.Errorf("event %q, want the plan's message", e)
	}
	// Once more: the pod exists too, and that is no error either.
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), a); err != nil {
		t.Errorf("repeated: %v", err)
	}
}

// DeletePod deletes the pod, and its claim only when the plan does not keep it.
func TestDeletePodKeepsOrRemovesTheClaim(t *testing.T) {
	for _, keep := range []bool{true, false} {
		f := newProofFixture(t, withClaims, ownedMemberPod("c-a", "uid-c"), memberClaim("c-a", "uid-c"))
		a := planner.Action{Kind: planner.DeletePod, Name: "c-a", KeepClaim: keep, Message: "finished"}
		if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), a); err != nil {
			t.Fatal(err)
		}
		if f.exists(t, &corev1.Pod{}, "c-a") {
			t.Errorf("keep claim %v: pod not deleted", keep)
		}
		if got := f.exists(t, &corev1.PersistentVolumeClaim{}, "c-a"); got != keep {
			t.Errorf("keep claim %v: claim exists %v", keep, got)
		}
		if e := f.sawEvent(t, corev1.EventTypeNormal, etcdv1beta2.EventReasonPodDeleted); !strings.Contains(e, "c-a: finished") {
			t.Errorf("event %q", e)
		}
	}
}

// FixPodImage and UpgradeMember patch the etcd container's image and the version
// annotation of the same pod in place: same name, same UID, nothing deleted.
func TestSetMemberImageInPlace(t *testing.T) {
	for _, tc := range []struct {
		kind   planner.Kind
		reason string
	}{
		{planner.FixPodImage, etcdv1beta2.EventReasonBootstrapPodCorrected},
		{planner.UpgradeMember, etcdv1beta2.EventReasonMemberUpgrading},
	} {
		p := ownedMemberPod("c-a", "uid-c")
		p.Annotations = map[string]string{render.AnnotationVersion: "3.6.99"}
		p.Spec.Containers[0].Image = "quay.io/coreos/etcd:v3.6.99"
		f := newProofFixture(t, nil, p)
		a := planner.Action{Kind: tc.kind, Name: "c-a", Version: "3.7.3", Message: "3.6.99 does not exist"}
		if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), a); err != nil {
			t.Fatal(err)
		}
		got := f.pod(t, "c-a")
		if img := got.Spec.Containers[0].Image; img != "quay.io/coreos/etcd:v3.7.3" || got.Annotations[render.AnnotationVersion] != "3.7.3" {
			t.Errorf("%v: image %s, version %s; want 3.7.3", tc.kind, img, got.Annotations[render.AnnotationVersion])
		}
		if got.UID != p.UID || len(f.deletes) != 0 {
			t.Errorf("%v: pod replaced (uid %s) or deleted (%v)", tc.kind, got.UID, f.deletes)
		}
		f.sawEvent(t, corev1.EventTypeNormal, tc.reason)
	}
}

// A pod already on the version is not patched; a pod the cluster does not control is
// not changed, and the refusal says why.
func TestSetMemberImageLeavesAlone(t *testing.T) {
	var patches int
	countPatches := interceptor.Funcs{Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		patches++
		return cl.Patch(ctx, obj, p, opts...)
	}}
	current := ownedMemberPod("c-a", "uid-c")
	current.Annotations = map[string]string{render.AnnotationVersion: "3.7.3"}
	foreign := ownedMemberPod("c-b", "uid-other")
	foreign.Spec.Containers[0].Image = "quay.io/coreos/etcd:v3.6.99"
	f := newProofFixtureWith(t, countPatches, nil, current, foreign)

	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t), planner.Action{Kind: planner.UpgradeMember, Name: "c-a", Version: "3.7.3"}); err != nil {
		t.Fatal(err)
	}
	if patches != 0 {
		t.Errorf("patched a pod already on 3.7.3 (%d patches)", patches)
	}

	_, err := f.r.act(context.Background(), f.cluster, f.observed(t), planner.Action{Kind: planner.FixPodImage, Name: "c-b", Version: "3.7.3"})
	var refused *notControlledError
	if !errors.As(err, &refused) {
		t.Fatalf("err %v, want a refusal", err)
	}
	if img := f.pod(t, "c-b").Spec.Containers[0].Image; img != "quay.io/coreos/etcd:v3.6.99" || patches != 0 {
		t.Errorf("changed a pod the cluster does not control: image %s, %d patches", img, patches)
	}
	f.warned(t, "not controlled by")
}

// A member's pod is never created on a claim of its name that is being deleted: the pod
// could never start (the claim stays while a pod uses it), so creating it waits for the
// claim to go (a bootstrap that never formed recreates a never-bound claim that way).
func TestCreateMembersWaitsForAClaimBeingDeleted(t *testing.T) {
	going := memberClaim("c-a", "uid-c")
	now := metav1.Now()
	going.DeletionTimestamp, going.Finalizers = &now, []string{"kubernetes.io/pvc-protection"}
	f := newProofFixtureWith(t, interceptor.Funcs{}, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
	}, going)
	err := f.r.createMembers(context.Background(), f.cluster, []render.Member{{Name: "c-a", InitialClusterState: render.StateExisting, InitialCluster: "c-a=http://c-a.c.ns.svc:2380", Version: "3.7.3"}})
	if err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("err = %v, want the claim being deleted named", err)
	}
	var pod corev1.Pod
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "c-a"}, &pod); !apierrors.IsNotFound(err) {
		t.Errorf("a pod was created on a claim being deleted (get: %v)", err)
	}
}
