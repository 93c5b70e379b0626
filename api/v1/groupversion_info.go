// Package v1 is the etcd.database.coreos.com/v1 API: the same three kinds as v1beta2
// (EtcdCluster, EtcdBackup, EtcdRestore) with the names CoreOS's operator inherited cleaned
// up: durations are metav1.Duration strings instead of *InSecond integers, JSON names are
// lowerCamelCase, credentials Secrets are all called credentialsSecret, the ignored
// busyboxImage is gone and cluster conditions are metav1.Condition.
//
// v1 is served but not stored: v1beta2 is the storage version and the conversion hub, and
// the operator itself works in v1beta2. The types here implement
// sigs.k8s.io/controller-runtime/pkg/conversion.Convertible, converting to and from
// v1beta2 losslessly in both directions. Values one version cannot express travel in the
// ConversionDataAnnotation annotation of the converted object (see conversion_data.go).
//
// +kubebuilder:object:generate=true
// +groupName=etcd.database.coreos.com
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "etcd.database.coreos.com", Version: "v1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
