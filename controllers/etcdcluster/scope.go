package etcdcluster

import (
	"fmt"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Scope says which EtcdClusters, among those the operator watches, this instance
// manages, by their etcd.database.coreos.com/scope annotation. Several operator
// instances (ours, or ours beside CoreOS's during a move) must never manage one
// cluster together: two planners acting on one membership would undo each other's
// steps.
type Scope string

const (
	// ScopeAll manages every watched EtcdCluster, whatever its annotation: one operator
	// for everything, the usual install.
	ScopeAll Scope = "ignore"
	// ScopeNamespaced manages only clusters without the annotation, as a CoreOS operator
	// without -cluster-wide did.
	ScopeNamespaced Scope = "namespaced"
	// ScopeClusterWide manages only clusters annotated "clusterwide", as a CoreOS operator
	// with -cluster-wide did.
	ScopeClusterWide Scope = "clusterwide"
)

// ParseScope reads the --scope-annotation flag; empty means ScopeAll.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case "", ScopeAll:
		return ScopeAll, nil
	case ScopeNamespaced, ScopeClusterWide:
		return Scope(s), nil
	}
	return "", fmt.Errorf("scope %q: want %s, %s or %s", s, ScopeAll, ScopeNamespaced, ScopeClusterWide)
}

// Manages reports whether an instance with this scope manages a cluster carrying these
// annotations. Any value of the annotation other than "clusterwide" keeps the cluster
// from both CoreOS-style instances, as CoreOS's own check did.
func (s Scope) Manages(annotations map[string]string) bool {
	v, annotated := annotations[etcdv1beta2.ScopeAnnotation]
	switch s {
	case ScopeNamespaced:
		return !annotated
	case ScopeClusterWide:
		return annotated && v == etcdv1beta2.ScopeClusterWide
	}
	return true
}
