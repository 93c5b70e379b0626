package etcdcluster

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

func TestMetricsExported(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	c.Status.Members.Ready = []string{"a", "b"}
	c.Status.Members.Unready = []string{"c"}
	recordAction(c, planner.Action{Kind: planner.AddLearner}, nil, false)
	recordAction(c, planner.Action{Kind: planner.AddLearner}, errors.New("boom"), false)
	recordAction(c, planner.Action{Kind: planner.Wait}, nil, false) // waits are not steps
	recordAction(c, planner.Action{Kind: planner.PromoteLearner}, &etcdWait{err: errors.New("learner not in sync")}, true)

	if got := testutil.ToFloat64(actionsTotal.WithLabelValues("ns", "m", "AddLearner", "ok")); got != 1 {
		t.Errorf("ok AddLearner count = %v, want 1", got)
	}
	if got := testutil.ToFloat64(actionsTotal.WithLabelValues("ns", "m", "AddLearner", "error")); got != 1 {
		t.Errorf("failed AddLearner count = %v, want 1", got)
	}
	if got := testutil.ToFloat64(actionsTotal.WithLabelValues("ns", "m", "PromoteLearner", "waiting")); got != 1 {
		t.Errorf("waiting PromoteLearner count = %v, want 1", got)
	}
	// Only this cluster's series: other tests of the package reconcile clusters too.
	if n := seriesWith(t, actionsTotal, "cluster", "m"); n != 3 {
		t.Errorf("%d action series, want 3 (Wait is not counted)", n)
	}
	if got := testutil.ToFloat64(clusterMembers.WithLabelValues("ns", "m", "unready")); got != 1 {
		t.Errorf("unready gauge = %v, want 1", got)
	}
	if etcdRequestMetrics() == nil {
		t.Fatal("etcd request metrics not registered")
	}
	if etcdRequestMetrics() != etcdRequestMetrics() {
		t.Error("etcd request metrics registered twice")
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, want := range []string{"etcd_operator_actions_total", "etcd_operator_cluster_members"} {
		if !names[want] {
			t.Errorf("%s not on the manager's registry", want)
		}
	}
}

func TestAvailabilityMetrics(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "avail"}}
	c.Status.Conditions = []etcdv1beta2.ClusterCondition{{Type: etcdv1beta2.ClusterConditionAvailable, Status: corev1.ConditionTrue}}
	recordAction(c, planner.Action{Kind: planner.Done}, nil, false)
	if got := testutil.ToFloat64(clusterAvailableGauge.WithLabelValues("ns", "avail")); got != 1 {
		t.Errorf("available = %v, want 1", got)
	}
	c.Status.Conditions[0].Status = corev1.ConditionFalse
	recordAction(c, planner.Action{Kind: planner.Done}, nil, false)
	if got := testutil.ToFloat64(clusterAvailableGauge.WithLabelValues("ns", "avail")); got != 0 {
		t.Errorf("available = %v, want 0", got)
	}
	forgetClusterMetrics("ns", "avail")
	for _, g := range []prometheus.Collector{clusterAvailableGauge, clusterMembers, actionsTotal} {
		if n := seriesWith(t, g, "cluster", "avail"); n != 0 {
			t.Errorf("%d series of the deleted cluster left", n)
		}
	}
}

// seriesWith counts c's series whose label name has value.
func seriesWith(t *testing.T, c prometheus.Collector, name, value string) int {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	go func() { c.Collect(ch); close(ch) }()
	n := 0
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == name && l.GetValue() == value {
				n++
			}
		}
	}
	return n
}
