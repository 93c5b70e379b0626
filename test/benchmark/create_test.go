package benchmark

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// rounds per size: each round measures both paths, interleaved, on the same real nodes;
// seven rounds keep the median off the outliers a shared 2-core machine produces.
const rounds = 7

// BenchmarkCreate measures apply → Available through the operator against the very same
// member pods (rendered by the same chart) created directly with a precomputed
// --initial-cluster, i.e. the fastest a static deployment can come up on this bench.
// Reported: median seconds of each path and their ratio (target ≤ 1.25).
func BenchmarkCreate(b *testing.B) {
	for _, size := range []int{3, 5} {
		b.Run(fmt.Sprintf("members=%d", size), func(b *testing.B) {
			e := framework.Setup(b)
			r, err := render.New()
			if err != nil {
				b.Fatal(err)
			}
			var viaOperator, static []time.Duration
			for i := 0; i < b.N*rounds; i++ {
				runStatic := func() { static = append(static, staticCreate(b, e, r, fmt.Sprintf("static-%d-%d", size, i), size)) }
				runOp := func() {
					viaOperator = append(viaOperator, operatorCreate(b, e, fmt.Sprintf("op-%d-%d", size, i), size))
				}
				// The paths take turns going first, as in BenchmarkBackup256MiB: the load of a
				// shared machine drifts, and a fixed order would hand the drift to one side.
				if i%2 == 0 {
					runStatic()
					runOp()
				} else {
					runOp()
					runStatic()
				}
			}
			op, st := median(viaOperator), median(static)
			b.ReportMetric(op.Seconds(), "operator-s")
			b.ReportMetric(st.Seconds(), "static-s")
			b.ReportMetric(op.Seconds()/st.Seconds(), "ratio")
			b.Logf("size %d: operator %v (runs %v), static %v (runs %v), ratio %.2f", size, op, viaOperator, st, static, op.Seconds()/st.Seconds())
		})
	}
}

func operatorCreate(b *testing.B, e *framework.Env, name string, size int) time.Duration {
	ctx := context.Background()
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: size, Version: etcdv1beta2.DefaultVersion},
	}
	start := time.Now()
	if err := e.C.Create(ctx, c); err != nil {
		b.Fatal(err)
	}
	until(b, 3*time.Minute, func() bool {
		var got etcdv1beta2.EtcdCluster
		if err := e.C.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
			return false
		}
		return framework.AvailableWith(&got, size) && readyPods(b, e, name) == size
	})
	took := time.Since(start)
	if err := e.C.Delete(ctx, c); err != nil {
		b.Fatal(err)
	}
	return took
}

// staticCreate creates the chart's Services and member pods directly, all with one
// precomputed initial cluster, and waits until every pod is Ready.
func staticCreate(b *testing.B, e *framework.Env, r *render.Renderer, name string, size int) time.Duration {
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if err := e.C.Create(ctx, owner); err != nil {
		b.Fatal(err)
	}
	// staticObjects (scale_test.go) makes them owned by owner, so deleting it cleans up,
	// like the operator's owner references.
	objs := staticObjects(b, r, owner, size)
	start := time.Now()
	for _, o := range objs {
		if err := e.C.Create(ctx, o); err != nil {
			b.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
	until(b, 3*time.Minute, func() bool { return readyPods(b, e, name) == size })
	took := time.Since(start)
	if err := e.C.Delete(ctx, owner, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		b.Fatal(err)
	}
	return took
}

func readyPods(b *testing.B, e *framework.Env, cluster string) int {
	var pods corev1.PodList
	if err := e.C.List(context.Background(), &pods, client.InNamespace("default"),
		client.MatchingLabelsSelector{Selector: render.ClusterSelector(cluster)}); err != nil {
		b.Fatal(err)
	}
	n := 0
	for i := range pods.Items {
		if framework.PodReady(&pods.Items[i]) {
			n++
		}
	}
	return n
}

// until waits for cond, checking every 50 ms: fine enough not to blur the measurement.
func until(b *testing.B, timeout time.Duration, cond func() bool) {
	b.Helper()
	poll.Eventually(b, timeout, 50*time.Millisecond, "the condition", func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
