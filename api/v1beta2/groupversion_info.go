// Package v1beta2 is the etcd.database.coreos.com/v1beta2 API: field for field the API of
// CoreOS's archived etcd-operator (v0.9.4), so CRs written for it apply unchanged, with a
// status subresource, validation and descriptions added.
//
// +kubebuilder:object:generate=true
// +groupName=etcd.database.coreos.com
package v1beta2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "etcd.database.coreos.com", Version: "v1beta2"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
