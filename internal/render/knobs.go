package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// PodKnobs are the cluster's member pod options (v1 spec.pod fields, v1beta2
// etcd.database.coreos.com/pod-* annotations), checked. The backup, restore and
// verification pods take their imagePullSecrets and priorityClassName from here.
func PodKnobs(c *v1beta2.EtcdCluster) (v1beta2.PodKnobs, error) {
	k, err := v1beta2.PodKnobsFromAnnotations(c.Annotations)
	if err != nil {
		return k, fmt.Errorf("render: %w", err)
	}
	return k, nil
}

// ClientServiceKnobs are the cluster's client Service options, checked.
func ClientServiceKnobs(c *v1beta2.EtcdCluster) (v1beta2.ClientServiceKnobs, error) {
	k, err := v1beta2.ClientServiceKnobsFromAnnotations(c.Annotations)
	if err != nil {
		return k, fmt.Errorf("render: %w", err)
	}
	return k, nil
}

// knobValues are the chart's podKnobs and clientService values. A topology spread
// constraint without a labelSelector gets the cluster's own (etcd_cluster: <name>):
// without one it would count no pods and constrain nothing.
func knobValues(c *v1beta2.EtcdCluster) (pod, svc map[string]interface{}, err error) {
	if p := c.Spec.Pod; p != nil {
		// Refused at admission; an object stored some other way is refused here.
		switch {
		case len(p.HostAliases) > 0:
			return nil, nil, fmt.Errorf("render: spec.pod.hostAliases may not be set: a member's peers must resolve to the members themselves")
		case len(p.Volumes) > 0:
			return nil, nil, fmt.Errorf("render: spec.pod.volumes may not be set: only the operator mounts volumes into member pods")
		case len(p.VolumeMounts) > 0:
			return nil, nil, fmt.Errorf("render: spec.pod.volumeMounts may not be set: only the operator mounts volumes into member pods")
		}
	}
	pk, err := PodKnobs(c)
	if err != nil {
		return nil, nil, err
	}
	for i := range pk.TopologySpreadConstraints {
		if pk.TopologySpreadConstraints[i].LabelSelector == nil {
			pk.TopologySpreadConstraints[i].LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"etcd_cluster": c.Name}}
		}
	}
	sk, err := ClientServiceKnobs(c)
	if err != nil {
		return nil, nil, err
	}
	if sk.Type == "" {
		sk.Type = corev1.ServiceTypeClusterIP
	}
	if pod, err = toMap(pk); err != nil {
		return nil, nil, fmt.Errorf("render: pod options: %w", err)
	}
	if svc, err = toMap(sk); err != nil {
		return nil, nil, fmt.Errorf("render: client service options: %w", err)
	}
	return pod, svc, nil
}

// Inherited is what the pods that serve a cluster without being members (backup,
// restore and verification pods) take from its member pods, so they can pull their
// images, are scheduled with the same priority and fit on the same tainted nodes.
type Inherited struct {
	ImagePullSecrets  []corev1.LocalObjectReference
	PriorityClassName string
	Tolerations       []corev1.Toleration
}

// InheritedFrom is what c's helper pods inherit; nothing for a nil cluster, and only the
// valid options (a cluster with invalid ones is refused by its own controller anyway).
func InheritedFrom(c *v1beta2.EtcdCluster) Inherited {
	if c == nil {
		return Inherited{}
	}
	var in Inherited
	if k, err := v1beta2.PodKnobsFromAnnotations(c.Annotations); err == nil {
		in.ImagePullSecrets, in.PriorityClassName = k.ImagePullSecrets, k.PriorityClassName
	}
	if c.Spec.Pod != nil {
		in.Tolerations = c.Spec.Pod.Tolerations
	}
	return in
}

// ApplyTo sets the inherited settings on a pod spec.
func (in Inherited) ApplyTo(s *corev1.PodSpec) {
	s.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), in.ImagePullSecrets...)
	s.PriorityClassName = in.PriorityClassName
	s.Tolerations = append([]corev1.Toleration(nil), in.Tolerations...)
}
