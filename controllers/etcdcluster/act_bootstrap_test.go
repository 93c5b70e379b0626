package etcdcluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// withClaims gives the cluster's members a data claim each.
func withClaims(c *etcdv1beta2.EtcdCluster) {
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
}

var bootstrapThree = planner.Action{Kind: planner.Bootstrap, Version: "3.7.3",
	Members: []planner.NewMember{{Name: "c-a"}, {Name: "c-b"}, {Name: "c-c"}}}

// creation is one Create the fake API server saw, with the cluster's status as stored
// at that moment.
type creation struct {
	kind, name string
	stored     etcdv1beta2.EtcdClusterStatus
}

// recordCreates records every Create, with the stored status of cluster ns/c then.
func recordCreates(into *[]creation) interceptor.Funcs {
	return interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		var ec etcdv1beta2.EtcdCluster
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "c"}, &ec); err != nil {
			return err
		}
		*into = append(*into, creation{kind: typeName(obj), name: obj.GetName(), stored: ec.Status})
		return cl.Create(ctx, obj, opts...)
	}}
}

// Bootstrap records the initial members in status before it creates anything, so an
// operator restarted half-way creates the rest with the very same --initial-cluster;
// claims come before pods, and every pod starts a new cluster of all three.
func TestBootstrapRecordsMembersBeforeCreatingPods(t *testing.T) {
	var creates []creation
	f := newProofFixtureWith(t, recordCreates(&creates), withClaims)
	o := f.observed(t)
	res, err := f.r.act(context.Background(), f.cluster, o, bootstrapThree)
	if err != nil || res.RequeueAfter != activeResync {
		t.Fatalf("result %+v, err %v", res, err)
	}
	names := []string{"c-a", "c-b", "c-c"}
	if len(creates) != 6 {
		t.Fatalf("created %v, want a claim and a pod for each of %v", creates, names)
	}
	for i, cr := range creates {
		if !slices.Equal(cr.stored.BootstrapMembers, names) || cr.stored.Phase != etcdv1beta2.ClusterPhaseCreating {
			t.Errorf("%s %s created while status recorded members %v, phase %q", cr.kind, cr.name, cr.stored.BootstrapMembers, cr.stored.Phase)
		}
		if want := map[bool]string{true: "*v1.pvc", false: "*v1.pod"}[i < 3]; cr.kind != want {
			t.Errorf("create #%d is %s %s, want claims first", i, cr.kind, cr.name)
		}
	}
	for _, n := range names {
		var p corev1.Pod
		if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: n}, &p); err != nil {
			t.Fatal(err)
		}
		if !metav1.IsControlledBy(&p, f.cluster) {
			t.Errorf("pod %s is not controlled by the cluster", n)
		}
		if s := etcdFlag(&p, "initial-cluster-state"); s != "new" {
			t.Errorf("pod %s: --initial-cluster-state=%s, want new", n, s)
		}
		if ic := etcdFlag(&p, "initial-cluster"); strings.Count(ic, "=") != 3 || !strings.HasPrefix(ic, "c-a=") {
			t.Errorf("pod %s: --initial-cluster=%s, want all three members", n, ic)
		}
	}
	if e := f.sawEvent(t, corev1.EventTypeNormal, etcdv1beta2.EventReasonBootstrapping); !strings.Contains(e, "[c-a c-b c-c]") {
		t.Errorf("event %q does not name the members", e)
	}
}

// Repeating a bootstrap that was interrupted writes no status again (the record is
// already there) and creates only what is missing.
func TestBootstrapResumes(t *testing.T) {
	var statusWrites int
	f := newProofFixtureWith(t, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			statusWrites++
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}, nil, ownedMemberPod("c-a", "uid-c"))
	f.cluster.Status.BootstrapMembers = []string{"c-a", "c-b", "c-c"}
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), bootstrapThree); err != nil {
		t.Fatal(err)
	}
	if statusWrites != 0 {
		t.Errorf("status written %d times; the initial members were already recorded", statusWrites)
	}
	if got := strings.Join(f.podNames(t), ","); got != "c-a,c-b,c-c" {
		t.Errorf("pods %s, want c-a,c-b,c-c", got)
	}
}

// When the initial members cannot be recorded, nothing is created.
func TestBootstrapCreatesNothingUnrecorded(t *testing.T) {
	f := newProofFixtureWith(t, interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return errors.New("apiserver unavailable")
		},
	}, withClaims)
	_, err := f.r.act(context.Background(), f.cluster, f.observed(t), bootstrapThree)
	if err == nil || !strings.Contains(err.Error(), "apiserver unavailable") {
		t.Fatalf("err %v, want the status write's", err)
	}
	if pods := f.podNames(t); len(pods) != 0 {
		t.Errorf("created pods %v without a record of the initial cluster", pods)
	}
	var claims corev1.PersistentVolumeClaimList
	if err := f.c.List(context.Background(), &claims); err != nil || len(claims.Items) != 0 {
		t.Errorf("claims %d (err %v), want none", len(claims.Items), err)
	}
}
