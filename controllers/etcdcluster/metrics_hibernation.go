package etcdcluster

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// A hibernated cluster (spec.size 0, internal/planner/hibernate.go) is unavailable on
// purpose. Its members stay in status.members.unready, the record they come back from, so
// etcd_operator_cluster_members{state="unready"} and etcd_operator_cluster_available read
// as an outage; this gauge lets alerts tell the two apart
// (etcd_operator_cluster_available == 0 unless etcd_operator_cluster_hibernated == 1).
var clusterHibernated = gaugeVec("etcd_operator_cluster_hibernated", "1 while the cluster is hibernated or being hibernated (spec.size 0: member pods stopped, claims and membership kept), else 0.", "namespace", "cluster")

func init() { metrics.Registry.MustRegister(clusterHibernated) }

// recordHibernation exports whether c is hibernating or hibernated, as its status says.
func recordHibernation(c *etcdv1beta2.EtcdCluster) {
	v := 0.0
	if hibernationReason(c.Status.Reason) || c.Status.Phase == etcdv1beta2.ClusterPhaseHibernated {
		v = 1
	}
	clusterHibernated.WithLabelValues(c.Namespace, c.Name).Set(v)
}

// hibernationReason: the planner stops the pods of, or has stopped, a cluster at size 0.
func hibernationReason(reason string) bool {
	return reason == etcdv1beta2.ReasonHibernating || reason == etcdv1beta2.ReasonHibernated
}
