package etcdcluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

var (
	lastDefragTime  = gaugeVec("etcd_operator_cluster_last_defragmentation_timestamp_seconds", "When the last defragmentation run (scheduled, threshold or NOSPACE) of the cluster ended, in Unix seconds.", "namespace", "cluster")
	lastDefragFreed = gaugeVec("etcd_operator_cluster_last_defragmentation_freed_bytes", "Bytes the last defragmentation run gave back, summed over the members.", "namespace", "cluster")
)

func init() {
	metrics.Registry.MustRegister(lastDefragTime, lastDefragFreed)
}

// recordDefragmentation exports the last run recorded in status (also after an operator
// restart, from what status recorded).
func recordDefragmentation(c *etcdv1beta2.EtcdCluster) {
	ms := c.Status.Maintenance
	if ms == nil || ms.LastDefragmentationTime == nil {
		return
	}
	lastDefragTime.WithLabelValues(c.Namespace, c.Name).Set(float64(ms.LastDefragmentationTime.Unix()))
	lastDefragFreed.WithLabelValues(c.Namespace, c.Name).Set(float64(ms.LastFreedBytes))
}

func forgetDefragmentationMetrics(labels prometheus.Labels) {
	lastDefragTime.DeletePartialMatch(labels)
	lastDefragFreed.DeletePartialMatch(labels)
}
