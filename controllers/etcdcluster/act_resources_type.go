package etcdcluster

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// checkClientServiceType refuses a client Service type the operator was not allowed to
// create (--client-service-types): ClusterIP always, others only when named; and
// annotations and labels on it unless allowed (--allow-client-service-metadata). A cluster
// asking for another keeps its current Service and gets nothing new until the spec or
// the operator's setting changes.
func (r *Reconciler) checkClientServiceType(c *etcdv1beta2.EtcdCluster) error {
	k, err := render.ClientServiceKnobs(c)
	if err != nil {
		return nil // ValidateCluster reports a bad value
	}
	if (len(k.Annotations) > 0 || len(k.Labels) > 0) && !r.ClientServiceMetadata {
		return fmt.Errorf("client Service annotations and labels are not allowed by this operator (other controllers act on them, e.g. to expose or publish the Service); its administrator can allow them with --allow-client-service-metadata")
	}
	t := k.Type
	if t == "" || t == corev1.ServiceTypeClusterIP || slices.Contains(r.ClientServiceTypes, t) {
		return nil
	}
	allowed := []string{string(corev1.ServiceTypeClusterIP)}
	for _, a := range r.ClientServiceTypes {
		allowed = append(allowed, string(a))
	}
	return fmt.Errorf("client Service type %s is not allowed by this operator (allowed: %v; its administrator can allow more with --client-service-types)", t, allowed)
}
