package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestPersistentVolumes gives members PVCs (pod.persistentVolumeClaimSpec): each member
// gets a bound claim named like its pod, owned by the cluster, and a member removed by a
// scale-down takes its claim with it (its data can never rejoin).
func TestPersistentVolumes(t *testing.T) {
	e := framework.Setup(t)
	ctx := context.Background()
	const name = "pvc"
	createOnClaims(e, name, 3, 120*time.Second)

	claims := func() map[string]corev1.PersistentVolumeClaim { return liveClaims(t, e, name) }
	pods := e.MemberPods(name)
	got := claims()
	if len(got) != 3 {
		t.Fatalf("%d claims, want 3", len(got))
	}
	for pod := range pods {
		pvc, ok := got[pod]
		if !ok {
			t.Errorf("member %s has no claim of its name", pod)
			continue
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			t.Errorf("claim %s is %s, want Bound", pod, pvc.Status.Phase)
		}
		owned := false
		for _, ref := range pvc.OwnerReferences {
			owned = owned || (ref.Kind == "EtcdCluster" && ref.Name == name)
		}
		if !owned {
			t.Errorf("claim %s is not owned by the cluster", pod)
		}
	}

	// A deleted member pod comes back on its claim: same name, same member, its data,
	// no replacement.
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for n := range pods {
		victim = n
		break
	}
	oldUID := pods[victim].UID
	p := pods[victim]
	if err := e.C.Delete(ctx, &p); err != nil {
		t.Fatal(err)
	}
	e.Eventually(90*time.Second, "the deleted member's pod back on its claim", func() error {
		np, ok := e.MemberPods(name)[victim]
		if !ok || np.UID == oldUID {
			return fmt.Errorf("pod %s not recreated yet", victim)
		}
		if !framework.HasAny(e.EventReasons(name), "PodRecreated") {
			return fmt.Errorf("no PodRecreated event: %v", e.EventReasons(name))
		}
		return nil
	})
	e.WaitAvailable(name, 3, 120*time.Second)
	after, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(framework.MemberIDs(after)) != fmt.Sprint(framework.MemberIDs(before)) {
		t.Errorf("members changed: %v -> %v", framework.MemberIDs(before), framework.MemberIDs(after))
	}
	if framework.HasAny(e.EventReasons(name), "MemberReplaced", "MemberRemoved") {
		t.Errorf("a member was replaced instead of restarted on its claim: %v", e.EventReasons(name))
	}

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 1 })
	e.WaitAvailable(name, 1, 120*time.Second)
	e.Eventually(60*time.Second, "removed members' claims deleted", func() error {
		left := claims()
		if len(left) != 1 {
			return fmt.Errorf("%d claims left: %v", len(left), keys(left))
		}
		for pod := range e.MemberPods(name) {
			if _, ok := left[pod]; !ok {
				return fmt.Errorf("the remaining member %s lost its claim", pod)
			}
		}
		return nil
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
