package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	ctrl "sigs.k8s.io/controller-runtime"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/etcd-operator/etcd-operator/internal/webhookcert"
)

// Where the webhook server's certificate comes from (--webhook-certs).
const (
	// webhookCertsSelfSigned: the operator keeps its own CA and certificate in a Secret
	// and injects the CA into its CRDs (kustomize and Helm installs).
	webhookCertsSelfSigned = "self-signed"
	// webhookCertsProvided: something else (OLM, cert-manager) mounts tls.crt/tls.key
	// into the certificate directory and sets the CRDs' caBundle.
	webhookCertsProvided = "provided"
)

// ServerOptions configure the webhook server that serves CRD conversion: the manager's
// --webhook-* flags (AddServerFlags).
type ServerOptions struct {
	port        int
	certDir     string
	certs       string
	serviceName string
	namespace   string
}

// AddServerFlags defines the --webhook-* flags on fs.
func AddServerFlags(fs *flag.FlagSet) *ServerOptions {
	o := &ServerOptions{}
	fs.IntVar(&o.port, "webhook-port", 9443, "port of the webhook server (CRD conversion); 0 disables it, and then only the storage version v1beta2 can be read and written")
	fs.StringVar(&o.certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory with the webhook server's tls.crt and tls.key")
	fs.StringVar(&o.certs, "webhook-certs", webhookCertsSelfSigned, `where the webhook certificate comes from: "self-signed" (the operator keeps a CA and certificate in a Secret of its namespace, writes them to --webhook-cert-dir and sets the CRDs' caBundle) or "provided" (mounted into --webhook-cert-dir, caBundle set by the installer, e.g. OLM)`)
	fs.StringVar(&o.serviceName, "webhook-service-name", "etcd-operator-webhook-service", "name of the Service in front of the webhook server (self-signed: the certificate's DNS names and the CRDs' service reference)")
	fs.StringVar(&o.namespace, "webhook-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the webhook Service and certificate Secret (default: $POD_NAMESPACE)")
	return o
}

// NewServer is the manager's webhook server (ctrl.Options.WebhookServer). The
// manager only starts it once something registers a webhook, which SetupServer skips
// when the webhook is disabled.
func NewServer(o *ServerOptions) crwebhook.Server {
	return crwebhook.NewServer(crwebhook.Options{
		Port:    o.port,
		CertDir: o.certDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			// HTTP/1.1 only: the API server's webhook client needs nothing more, and it
			// keeps the server out of reach of HTTP/2 stream-reset floods (CVE-2023-44487).
			c.NextProtos = []string{"http/1.1"}
		}},
	})
}

// SetupServer provisions the webhook certificate (self-signed mode) and registers the
// webhooks with register (the conversion webhook). It returns an error only for
// invalid flags and failures worth a restart (the API server refusing the certificate
// Secret, say); where the webhook simply cannot run here (no certificate provided, no
// namespace known) it logs why and leaves the webhook server off: v1beta2, the storage
// version, is served without conversion, so the controllers still work.
func SetupServer(ctx context.Context, mgr ctrl.Manager, o *ServerOptions, register func(ctrl.Manager) error) error {
	log := ctrl.Log.WithName("webhook")
	if o.port == 0 {
		log.Info("conversion webhook disabled (--webhook-port=0); only the storage version v1beta2 is served")
		return nil
	}
	if o.port < 0 || o.port > 65535 {
		return fmt.Errorf("--webhook-port=%d: want 0 to disable, or a port", o.port)
	}
	switch o.certs {
	case webhookCertsProvided:
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(o.certDir, f)); err != nil {
				log.Error(err, fmt.Sprintf("conversion webhook disabled: no certificate in %s", o.certDir),
					"hint", "mount tls.crt and tls.key there, or run with --webhook-certs=self-signed")
				return nil
			}
		}
	case webhookCertsSelfSigned:
		if o.namespace == "" {
			log.Error(errors.New("namespace unknown"), "conversion webhook disabled: set POD_NAMESPACE or --webhook-namespace to provision its certificate")
			return nil
		}
		p, err := webhookcert.NewForConfig(mgr.GetConfig(), webhookcert.Options{
			Namespace:   o.namespace,
			ServiceName: o.serviceName,
			CertDir:     o.certDir,
			Log:         log,
		})
		if err != nil {
			return err
		}
		// The files must exist before the webhook server starts; later renewals and
		// caBundle repairs are the Runnable's.
		if err := p.Sync(ctx); err != nil {
			return fmt.Errorf("provision the webhook certificate: %w", err)
		}
		if err := mgr.Add(p); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--webhook-certs=%q: want %q or %q", o.certs, webhookCertsSelfSigned, webhookCertsProvided)
	}
	return register(mgr)
}

// RegisterConversion serves the conversion webhook and makes the pod Ready only once the
// webhook server serves: the API server converts every read and write of a v1 object
// through it, and a Service endpoint that refuses connections makes kubectl fail (seen
// on real nodes, where the pod was Ready before the server listened). It is SetupServer's
// register in the operator.
func RegisterConversion(mgr ctrl.Manager) error {
	if err := SetupConversion(mgr); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker())
}
