package controllers

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

func TestMetricsExported(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	c.Status.Members.Ready = []string{"a", "b"}
	c.Status.Members.Unready = []string{"c"}
	recordAction(c, planner.Action{Kind: planner.AddLearner}, nil)
	recordAction(c, planner.Action{Kind: planner.AddLearner}, errors.New("boom"))
	recordAction(c, planner.Action{Kind: planner.Wait}, nil) // waits are not steps

	if got := testutil.ToFloat64(actionsTotal.WithLabelValues("ns", "m", "AddLearner", "ok")); got != 1 {
		t.Errorf("ok AddLearner count = %v, want 1", got)
	}
	if got := testutil.ToFloat64(actionsTotal.WithLabelValues("ns", "m", "AddLearner", "error")); got != 1 {
		t.Errorf("failed AddLearner count = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(actionsTotal); n != 2 {
		t.Errorf("%d action series, want 2 (Wait is not counted)", n)
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
