package etcdcluster

import (
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// podKnobFields are the member pod options v1beta2 stores as annotations (v1's spec.pod
// imagePullSecrets, priorityClassName, topologySpreadConstraints, serviceAccountName,
// dnsConfig), fingerprinted by their parsed value, so the same JSON spaced differently
// is no change. The chart renders them into a pod only when it is created: a change
// rolls out through new pods, one member at a time (reconfigure.go).
var podKnobFields = []struct {
	name  string
	value func(k etcdv1beta2.PodKnobs) any
}{
	{"pod.imagePullSecrets", func(k etcdv1beta2.PodKnobs) any { return k.ImagePullSecrets }},
	{"pod.priorityClassName", func(k etcdv1beta2.PodKnobs) any { return k.PriorityClassName }},
	{"pod.topologySpreadConstraints", func(k etcdv1beta2.PodKnobs) any { return k.TopologySpreadConstraints }},
	{"pod.serviceAccountName", func(k etcdv1beta2.PodKnobs) any { return k.ServiceAccountName }},
	{"pod.dnsConfig", func(k etcdv1beta2.PodKnobs) any { return k.DNSConfig }},
}

// podKnobFingerprint adds the pod options' hashes to a fingerprint. Invalid options
// never get this far (render.ValidateCluster refuses the spec first); should they, the
// valid part is what counts.
func podKnobFingerprint(c *etcdv1beta2.EtcdCluster, out map[string]string) {
	k, _ := render.PodKnobs(c)
	for _, f := range podKnobFields {
		if h := hashValue(f.value(k)); h != "" {
			out[f.name] = h
		}
	}
}
