package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// spec.auth is stored as v1beta2 annotations: auth ("enabled") and auth-root-secret.

// authFields are spec.auth's fields with the annotations v1beta2 stores them as.
// Without spec.auth the root Secret's annotation is not the field's: converted back it
// stays an annotation (authFromAnnotations reads it only with auth "enabled").
func authFields(a *Auth) []annotatedField {
	if a == nil {
		return []annotatedField{{annotation: v1beta2.AuthAnnotation, fits: isAuthEnabledText}}
	}
	return []annotatedField{
		{annotation: v1beta2.AuthAnnotation, value: v1beta2.AuthEnabledValue, fits: isAuthEnabledText},
		{annotation: v1beta2.AuthRootSecretAnnotation, value: a.RootSecret},
	}
}

// authFromAnnotations takes spec.auth out of the v1beta2 annotations; nil unless auth is
// "enabled". A root Secret annotation without it stays an annotation.
func authFromAnnotations(meta *metav1.ObjectMeta, kept clusterV1Data) *Auth {
	if annotationToField(meta, v1beta2.AuthAnnotation, kept.annotatedFields, isAuthEnabledText) == "" {
		return nil
	}
	return &Auth{RootSecret: annotationToField(meta, v1beta2.AuthRootSecretAnnotation, kept.annotatedFields, anyValue)}
}

func isAuthEnabledText(v string) bool { return v == v1beta2.AuthEnabledValue }
