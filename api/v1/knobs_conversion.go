package v1

import (
	"bytes"
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The member pod options and spec.clientService, which v1beta2 stores as annotations
// (see api/v1beta2/knobs.go): strings as they are, everything else as the JSON of the
// v1 field. An annotation whose text the field would not write back the same way (not
// JSON of that shape, or JSON spaced differently) stays an annotation on the v1 side.

// jsonText is v's JSON, or "" when v is empty (nil, or a list or map without entries).
func jsonText(v any) string {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map:
		if rv.Len() == 0 {
			return ""
		}
	case reflect.Pointer:
		if rv.IsNil() {
			return ""
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// fitsJSON is annotatedField.fits for a field of newT's type: the text decodes strictly
// into it, and the field encodes back to the same text.
func fitsJSON[T any](v string) bool {
	_, ok := decodeExact[T](v)
	return ok
}

func decodeExact[T any](v string) (T, bool) {
	var out T
	d := json.NewDecoder(bytes.NewReader([]byte(v)))
	d.DisallowUnknownFields()
	if err := d.Decode(&out); err != nil || d.More() {
		return out, false
	}
	return out, jsonText(out) == v
}

func fromJSONAnnotation[T any](meta *metav1.ObjectMeta, key string, kept annotatedFields) T {
	var zero T
	v := annotationToField(meta, key, kept, fitsJSON[T])
	if v == "" {
		return zero
	}
	out, _ := decodeExact[T](v)
	return out
}

// podKnobFields are the v1 pod options with the annotations v1beta2 stores them as.
func podKnobFields(p *PodPolicy) []annotatedField {
	if p == nil {
		p = &PodPolicy{}
	}
	return []annotatedField{
		{annotation: v1beta2.PodImagePullSecretsAnnotation, value: jsonText(p.ImagePullSecrets), fits: fitsJSON[[]corev1.LocalObjectReference]},
		{annotation: v1beta2.PodPriorityClassNameAnnotation, value: p.PriorityClassName},
		{annotation: v1beta2.PodTopologySpreadConstraintsAnnotation, value: jsonText(p.TopologySpreadConstraints), fits: fitsJSON[[]corev1.TopologySpreadConstraint]},
		{annotation: v1beta2.PodServiceAccountNameAnnotation, value: p.ServiceAccountName},
		{annotation: v1beta2.PodDNSConfigAnnotation, value: jsonText(p.DNSConfig), fits: fitsJSON[*corev1.PodDNSConfig]},
	}
}

// podKnobsFromAnnotations takes the pod options out of the v1beta2 annotations into p;
// whether any was set.
func podKnobsFromAnnotations(meta *metav1.ObjectMeta, kept annotatedFields, p *PodPolicy) bool {
	p.ImagePullSecrets = fromJSONAnnotation[[]corev1.LocalObjectReference](meta, v1beta2.PodImagePullSecretsAnnotation, kept)
	p.PriorityClassName = annotationToField(meta, v1beta2.PodPriorityClassNameAnnotation, kept, anyValue)
	p.TopologySpreadConstraints = fromJSONAnnotation[[]corev1.TopologySpreadConstraint](meta, v1beta2.PodTopologySpreadConstraintsAnnotation, kept)
	p.ServiceAccountName = annotationToField(meta, v1beta2.PodServiceAccountNameAnnotation, kept, anyValue)
	p.DNSConfig = fromJSONAnnotation[*corev1.PodDNSConfig](meta, v1beta2.PodDNSConfigAnnotation, kept)
	return len(p.ImagePullSecrets) > 0 || p.PriorityClassName != "" || len(p.TopologySpreadConstraints) > 0 ||
		p.ServiceAccountName != "" || p.DNSConfig != nil
}

// clientServiceFields are spec.clientService's fields with their v1beta2 annotations.
func clientServiceFields(s *ClientService) []annotatedField {
	if s == nil {
		s = &ClientService{}
	}
	policy := ""
	if s.IPFamilyPolicy != nil {
		policy = string(*s.IPFamilyPolicy)
	}
	return []annotatedField{
		{annotation: v1beta2.ClientServiceTypeAnnotation, value: string(s.Type)},
		{annotation: v1beta2.ClientServiceAnnotationsAnnotation, value: jsonText(s.Annotations), fits: fitsJSON[map[string]string]},
		{annotation: v1beta2.ClientServiceLabelsAnnotation, value: jsonText(s.Labels), fits: fitsJSON[map[string]string]},
		{annotation: v1beta2.ClientServiceLoadBalancerSourceRangesAnnotation, value: jsonText(s.LoadBalancerSourceRanges), fits: fitsJSON[[]string]},
		{annotation: v1beta2.ClientServiceExternalTrafficPolicyAnnotation, value: string(s.ExternalTrafficPolicy)},
		{annotation: v1beta2.ClientServiceIPFamilyPolicyAnnotation, value: policy},
		{annotation: v1beta2.ClientServiceIPFamiliesAnnotation, value: jsonText(s.IPFamilies), fits: fitsJSON[[]corev1.IPFamily]},
	}
}

// clientServiceFromAnnotations takes spec.clientService out of the v1beta2 annotations;
// nil when none holds a field (and the v1 original had no empty clientService).
func clientServiceFromAnnotations(meta *metav1.ObjectMeta, kept clusterV1Data) *ClientService {
	s := &ClientService{
		Type:                     corev1.ServiceType(annotationToField(meta, v1beta2.ClientServiceTypeAnnotation, kept.annotatedFields, anyValue)),
		Annotations:              fromJSONAnnotation[map[string]string](meta, v1beta2.ClientServiceAnnotationsAnnotation, kept.annotatedFields),
		Labels:                   fromJSONAnnotation[map[string]string](meta, v1beta2.ClientServiceLabelsAnnotation, kept.annotatedFields),
		LoadBalancerSourceRanges: fromJSONAnnotation[[]string](meta, v1beta2.ClientServiceLoadBalancerSourceRangesAnnotation, kept.annotatedFields),
		ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicy(annotationToField(meta, v1beta2.ClientServiceExternalTrafficPolicyAnnotation, kept.annotatedFields, anyValue)),
		IPFamilies:               fromJSONAnnotation[[]corev1.IPFamily](meta, v1beta2.ClientServiceIPFamiliesAnnotation, kept.annotatedFields),
	}
	if p := annotationToField(meta, v1beta2.ClientServiceIPFamilyPolicyAnnotation, kept.annotatedFields, anyValue); p != "" {
		policy := corev1.IPFamilyPolicy(p)
		s.IPFamilyPolicy = &policy
	}
	if reflect.DeepEqual(s, &ClientService{}) && !kept.EmptyClientService {
		return nil
	}
	return s
}

// emptyClientService: s is set but holds nothing, which no annotation records.
func emptyClientService(s *ClientService) bool {
	if s == nil {
		return false
	}
	for _, f := range clientServiceFields(s) {
		if f.value != "" {
			return false
		}
	}
	return true
}
