package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// oldCoreOSPod is a member pod CoreOS etcd-operator 0.9.4 made for c on etcd version.
func oldCoreOSPod(t *testing.T, c *etcdv1beta2.EtcdCluster, name, version string, ready bool) *corev1.Pod {
	t.Helper()
	shape := c.DeepCopy()
	shape.Spec.Version = "3.6.16" // the chart renders only versions this operator runs
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p := memberPod(t, shape, name, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}})
	delete(p.Annotations, AnnotationSpecFingerprint)
	p.Annotations[render.AnnotationVersion] = version
	p.Spec.Containers[0].Image = "quay.io/coreos/etcd:v" + version
	coreOSShaped(p)
	return p
}

// writeCounter counts every write the reconciler makes, but for the cluster's status.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeCounter) add(op string, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, fmt.Sprintf("%s %T %s", op, obj, obj.GetName()))
}

func (w *writeCounter) funcs() *interceptor.Funcs {
	return &interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
			w.add("create", obj)
			return c.Create(ctx, obj, o...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.UpdateOption) error {
			w.add("update", obj)
			return c.Update(ctx, obj, o...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
			w.add("patch", obj)
			return c.Patch(ctx, obj, p, o...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteOption) error {
			w.add("delete", obj)
			return c.Delete(ctx, obj, o...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteAllOfOption) error {
			w.add("deleteAllOf", obj)
			return c.DeleteAllOf(ctx, obj, o...)
		},
	}
}

// A takeover of a cluster CoreOS left on etcd 3.3 or 3.4: adopted read-only. Nothing but
// the cluster's status is written (no pod, claim, Service or budget; no etcd client is
// even made while no pod is dialable), the Available condition says UpgradePathRequired
// with the minor steps left from the oldest version running, and status reports what
// the pods show.
func TestTakeoverOfOldCoreOSClusterIsReadOnly(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		pods       map[string]string // pod → the version it runs
		oldest     string
		path       string
	}{
		{"three members on 3.3", "3.3.27", map[string]string{"a": "3.3.27", "b": "3.3.27", "c": "3.3.27"}, "3.3.27", "3.3 → 3.4 → 3.5"},
		{"three members on 3.4", "3.4.35", map[string]string{"a": "3.4.35", "b": "3.4.35", "c": "3.4.35"}, "3.4.35", "3.4 → 3.5"},
		{"an upgrade under CoreOS half done: counted from the oldest member", "3.4.35", map[string]string{"a": "3.4.35", "b": "3.3.27", "c": "3.4.35"}, "3.3.27", "3.3 → 3.4 → 3.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "old" + strings.ReplaceAll(tc.spec, ".", "")
			c := statusCluster(name, tc.spec)
			c.Spec.Size = 3
			c.Status.Phase = etcdv1beta2.ClusterPhaseRunning // what CoreOS wrote
			objs := []client.Object{c}
			for suffix, v := range tc.pods {
				objs = append(objs, oldCoreOSPod(t, c, name+"-"+suffix, v, suffix != "c"))
			}
			w := &writeCounter{}
			f := newClusterFixture(t, w.funcs(), objs...)
			f.reconcile(t, name)
			f.reconcile(t, name) // a second pass changes nothing either

			if len(w.writes) != 0 {
				t.Errorf("writes to a read-only adopted cluster: %v", w.writes)
			}
			if n := f.r.admins.len(); n != 0 {
				t.Errorf("%d etcd clients made, want none: no pod is dialable", n)
			}
			got := f.cluster(t, name)
			var avail *etcdv1beta2.ClusterCondition
			for i := range got.Status.Conditions {
				if got.Status.Conditions[i].Type == etcdv1beta2.ClusterConditionAvailable {
					avail = &got.Status.Conditions[i]
				}
			}
			if avail == nil || avail.Reason != etcdv1beta2.ReasonUpgradePathRequired {
				t.Fatalf("Available condition %+v, want reason %s", avail, etcdv1beta2.ReasonUpgradePathRequired)
			}
			for _, s := range []string{tc.path, "read-only", "CoreOS etcd-operator", "EtcdRestore"} {
				if !strings.Contains(avail.Message, s) {
					t.Errorf("condition message %q lacks %q", avail.Message, s)
				}
			}
			if avail.Status != corev1.ConditionTrue {
				t.Errorf("Available %s with 2 of 3 pods Ready, want True", avail.Status)
			}
			if got.Status.CurrentVersion != tc.oldest || got.Status.Size != 3 ||
				strings.Join(got.Status.Members.Ready, ",") != name+"-a,"+name+"-b" || strings.Join(got.Status.Members.Unready, ",") != name+"-c" {
				t.Errorf("status: currentVersion %q size %d ready %v unready %v", got.Status.CurrentVersion, got.Status.Size, got.Status.Members.Ready, got.Status.Members.Unready)
			}
			if got.Status.Bootstrapped {
				t.Error("status.bootstrapped set: the operator never ran this cluster")
			}
			if n := strings.Count(strings.Join(drain(f.rec), "\n"), etcdv1beta2.ReasonUpgradePathRequired); n != 1 {
				t.Errorf("%d %s events over two reconciles, want 1", n, etcdv1beta2.ReasonUpgradePathRequired)
			}
		})
	}
}

// A new cluster asking for etcd 3.4 (no CoreOS pods) is still refused: there is nothing
// to adopt and nothing this operator could create.
func TestNewClusterOnOldVersionStillRefused(t *testing.T) {
	c := statusCluster("new34", "3.4.35")
	w := &writeCounter{}
	f := newClusterFixture(t, w.funcs(), c)
	f.reconcile(t, "new34")
	got := f.cluster(t, "new34")
	if got.Status.Phase != etcdv1beta2.ClusterPhaseFailed || !strings.Contains(got.Status.Reason, "not supported") {
		t.Errorf("status phase %q reason %q, want Failed, not supported", got.Status.Phase, got.Status.Reason)
	}
	if len(w.writes) != 0 {
		t.Errorf("writes for a refused cluster: %v", w.writes)
	}
}

// spec.version already 3.5 while CoreOS's operator still rolls its pods from 3.4: the
// cluster stays read-only (taking it over would have two operators restart its members,
// this one a 3.4 member itself) until no CoreOS pod runs below 3.5, by its version
// annotation, its image, or the image the kubelet reports running. status.currentVersion
// is the oldest running, also when it is newer than the spec.
func TestOldCoreOSClusterStaysReadOnlyMidRollout(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		pod        func(p *corev1.Pod) // changes pod c
		oldest     string
	}{
		{"spec 3.5, one pod still annotated 3.4", "3.5.36", func(p *corev1.Pod) {
			p.Annotations[render.AnnotationVersion] = "3.4.35"
			p.Spec.Containers[0].Image = "quay.io/coreos/etcd:v3.4.35"
		}, "3.4.35"},
		{"spec 3.5, one pod patched to 3.5 but still running the 3.4 image", "3.5.36", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: "quay.io/coreos/etcd:v3.4.35"}}
		}, "3.4.35"},
		{"spec lowered to 3.3 while the pods run 3.4: the oldest running is reported", "3.3.27", func(p *corev1.Pod) {
			p.Annotations[render.AnnotationVersion] = "3.4.35"
			p.Spec.Containers[0].Image = "quay.io/coreos/etcd:v3.4.35"
		}, "3.4.35"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "roll" + strings.ReplaceAll(tc.spec, ".", "")
			c := statusCluster(name, tc.spec)
			c.Spec.Size = 3
			objs := []client.Object{c}
			podVersion := tc.spec
			if tc.spec == "3.3.27" {
				podVersion = "3.4.35"
			}
			for _, suffix := range []string{"a", "b", "c"} {
				p := oldCoreOSPod(t, c, name+"-"+suffix, podVersion, true)
				if suffix == "c" {
					tc.pod(p)
				}
				objs = append(objs, p)
			}
			w := &writeCounter{}
			f := newClusterFixture(t, w.funcs(), objs...)
			f.reconcile(t, name)
			if len(w.writes) != 0 {
				t.Errorf("writes while CoreOS's operator still rolls the cluster: %v", w.writes)
			}
			got := f.cluster(t, name)
			var avail *etcdv1beta2.ClusterCondition
			for i := range got.Status.Conditions {
				if got.Status.Conditions[i].Type == etcdv1beta2.ClusterConditionAvailable {
					avail = &got.Status.Conditions[i]
				}
			}
			if avail == nil || avail.Reason != etcdv1beta2.ReasonUpgradePathRequired || !strings.Contains(avail.Message, "give it another scope") {
				t.Fatalf("Available condition %+v, want reason %s telling to pause the cluster here", avail, etcdv1beta2.ReasonUpgradePathRequired)
			}
			if got.Status.CurrentVersion != tc.oldest || got.Status.Bootstrapped {
				t.Errorf("status: currentVersion %q (want %s), bootstrapped %v", got.Status.CurrentVersion, tc.oldest, got.Status.Bootstrapped)
			}
		})
	}
}
