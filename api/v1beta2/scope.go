package v1beta2

// ScopeAnnotation is CoreOS's way of choosing which operator instance manages an
// EtcdCluster: a CoreOS operator started with -cluster-wide managed only clusters whose
// annotation is ScopeClusterWide, and a namespaced one only clusters without the
// annotation. This operator honours it when started with --scope-annotation (see the
// README); by default it manages every EtcdCluster it watches.
const ScopeAnnotation = "etcd.database.coreos.com/scope"

// ScopeClusterWide is the value of ScopeAnnotation that hands a cluster to a cluster-wide
// operator instance.
const ScopeClusterWide = "clusterwide"
