// Package webhook serves the CRD conversion webhook of the etcd.database.coreos.com kinds:
// the API server calls it to convert EtcdCluster, EtcdBackup and EtcdRestore objects
// between v1beta2 (stored, the hub) and v1 (served beside it). server.go sets up the
// manager's webhook server that serves it: the --webhook-* flags and the certificate.
package webhook

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// ConvertPath is where the conversion webhook is served; the CRDs' spec.conversion
// clientConfig (config/crd/patches) points there.
const ConvertPath = "/convert"

// SetupConversion registers the conversion webhook for the three kinds with mgr's webhook
// server, at ConvertPath. mgr's scheme must hold both api/v1beta2 and api/v1: a kind that
// is not convertible in it is an error here rather than a webhook that silently converts
// nothing.
func SetupConversion(mgr ctrl.Manager) error {
	for _, obj := range []client.Object{&v1beta2.EtcdCluster{}, &v1beta2.EtcdBackup{}, &v1beta2.EtcdRestore{}} {
		ok, err := conversion.IsConvertible(mgr.GetScheme(), obj)
		if err != nil {
			return fmt.Errorf("conversion webhook for %T: %w", obj, err)
		}
		if !ok {
			return fmt.Errorf("conversion webhook for %T: the manager's scheme does not hold a convertible second version (register api/v1)", obj)
		}
		if err := ctrl.NewWebhookManagedBy(mgr, obj).Complete(); err != nil {
			return fmt.Errorf("conversion webhook for %T: %w", obj, err)
		}
	}
	return nil
}
