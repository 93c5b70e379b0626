// Package webhookcert provisions the serving certificate of the operator's webhook server
// (the CRD conversion webhook) where nothing else does: the kustomize and Helm installs.
// Under OLM it is not used; OLM mounts a certificate and sets the CRDs' caBundle itself.
//
// One self-signed CA and a serving certificate for the webhook Service's DNS names are
// kept in a Secret in the operator's namespace, so restarts and every replica (leader or
// not, all of them serve conversion requests) use the same pair. Each replica copies the
// pair into its webhook server's certificate directory and injects the CA into
// spec.conversion.webhook.clientConfig.caBundle of the operator's CRDs. A Provisioner is
// also a manager Runnable that repeats this every Interval, which renews certificates
// before they expire (the webhook server reloads changed files by itself) and re-injects a
// caBundle that something reset (a `kubectl replace` of the CRDs, say).
//
// What it changes in a CRD, and what it leaves alone:
//   - A CRD whose conversion strategy is None (or unset) is left alone: it then has nothing
//     to convert, and turning conversion on is the CRD author's decision, not a side effect
//     of starting the operator.
//   - A CRD with strategy Webhook whose clientConfig names a URL is left alone: someone
//     routes conversion elsewhere on purpose, and our CA would not match that server.
//   - Otherwise (strategy Webhook with a Service reference, or none): caBundle is set to our
//     CA, and the Service reference to our Service (name and namespace; path and port only
//     if unset). The CA is only good for our Service's names, so a caBundle next to another
//     Service's reference would never work; and the Helm chart may be installed in any
//     namespace under any release name while its CRD copies name the kustomize defaults.
//
// Key material is never logged.
package webhookcert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Secret lives in the operator's namespace; the kustomize namespace transformer and
// the Helm chart move the generated Role to the namespace actually used. Create cannot be
// limited by name (the name is not known when it is authorized). The CRD rule is limited to
// the operator's own CRDs; get and patch suffice because they are read by name, not watched.
//
// get and update are limited to that Secret's name under the kustomize install (the
// chart substitutes its own name; --webhook-service-name changes it, and then the Role must
// name <service>-cert too).
//
// +kubebuilder:rbac:groups="",namespace=etcd-operator-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=etcd-operator-system,resources=secrets,resourceNames=etcd-operator-webhook-service-cert,verbs=get;update
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=etcdclusters.etcd.database.coreos.com;etcdbackups.etcd.database.coreos.com;etcdrestores.etcd.database.coreos.com,verbs=get;patch

// CRDNames are the operator's CRDs (keep in step with the resourceNames above).
var CRDNames = []string{
	"etcdclusters.etcd.database.coreos.com",
	"etcdbackups.etcd.database.coreos.com",
	"etcdrestores.etcd.database.coreos.com",
}

// Defaults of Options.
const (
	DefaultPath     = "/convert"
	DefaultPort     = 443
	DefaultInterval = time.Minute
)

// Options configure a Provisioner.
type Options struct {
	// Namespace of the operator: holds the Secret and the webhook Service. Required.
	Namespace string
	// ServiceName of the webhook Service. Required.
	ServiceName string
	// SecretName of the Secret holding the CA and serving pair; default <ServiceName>-cert.
	SecretName string
	// CertDir is the webhook server's certificate directory (tls.crt, tls.key). Required.
	CertDir string
	// CRDNames whose conversion webhook gets the caBundle; default CRDNames.
	CRDNames []string
	// Path and Port of the Service reference set where a CRD has none (default /convert, 443).
	Path string
	Port int32
	// Interval between checks when run as a Runnable; default one minute.
	Interval time.Duration
	Log      logr.Logger

	// now is the clock; tests move it.
	now func() time.Time
}

// Provisioner keeps the webhook certificate, the certificate directory and the CRDs'
// caBundle in step. It is a manager Runnable that runs on every replica.
type Provisioner struct {
	c     client.Client
	o     Options
	names []string
}

// Scheme holds the types a Provisioner's client needs.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// NewForConfig is New with an uncached client of its own for cfg: the manager's cache
// is not running yet when the first Sync has to happen, and caching Secrets or CRDs for
// three reads a minute would cost more than it saves.
func NewForConfig(cfg *rest.Config, o Options) (*Provisioner, error) {
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	return New(c, o)
}

// New returns a Provisioner using c, which should read from the API server directly and
// must know core/v1 and apiextensions/v1 (see Scheme).
func New(c client.Client, o Options) (*Provisioner, error) {
	if o.Namespace == "" || o.ServiceName == "" || o.CertDir == "" {
		return nil, errors.New("webhookcert: Namespace, ServiceName and CertDir are required")
	}
	if o.SecretName == "" {
		o.SecretName = o.ServiceName + "-cert"
	}
	if o.CRDNames == nil {
		o.CRDNames = CRDNames
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.now == nil {
		o.now = time.Now
	}
	return &Provisioner{c: c, o: o, names: DNSNames(o.ServiceName, o.Namespace)}, nil
}

// Sync makes sure the Secret holds a valid pair for the Service's names (creating or
// renewing it), writes the pair to the certificate directory, and injects the CA into the
// CRDs. Call it once before the webhook server starts: the server fails to start without
// the files.
func (p *Provisioner) Sync(ctx context.Context) error {
	b, err := p.ensureSecret(ctx)
	if err != nil {
		return fmt.Errorf("webhook certificate Secret %s/%s: %w", p.o.Namespace, p.o.SecretName, err)
	}
	changed, err := WriteFiles(p.o.CertDir, b)
	if err != nil {
		return fmt.Errorf("webhook certificate directory %s: %w", p.o.CertDir, err)
	}
	if changed {
		p.o.Log.Info("wrote the webhook serving certificate", "dir", p.o.CertDir)
	}
	var errs []error
	for _, name := range p.o.CRDNames {
		if err := p.injectCABundle(ctx, name, b.CACert); err != nil {
			errs = append(errs, fmt.Errorf("CRD %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Start runs Sync every Interval until ctx ends. Failures are logged and retried on the
// next tick rather than stopping the manager: a transient API error must not take the
// controllers down, and the webhook keeps serving the certificate it has.
func (p *Provisioner) Start(ctx context.Context) error {
	t := time.NewTicker(p.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := p.Sync(ctx); err != nil && ctx.Err() == nil {
				p.o.Log.Error(err, "webhook certificate check failed; retrying", "in", p.o.Interval)
			}
		}
	}
}

// NeedLeaderElection is false: every replica serves the webhook and needs the files.
func (p *Provisioner) NeedLeaderElection() bool { return false }

// ensureSecret returns a valid Bundle from the Secret, creating or renewing it. Replicas
// race here on first start and on renewal: whoever loses (AlreadyExists, Conflict) reads
// the winner's Secret again and uses it, so all end up with one pair.
func (p *Provisioner) ensureSecret(ctx context.Context) (*Bundle, error) {
	key := client.ObjectKey{Namespace: p.o.Namespace, Name: p.o.SecretName}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		var s corev1.Secret
		err := p.c.Get(ctx, key, &s)
		if apierrors.IsNotFound(err) {
			b, err := Renew(&Bundle{}, RenewAll, p.names, p.o.now())
			if err != nil {
				return nil, err
			}
			s = corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
					Labels: map[string]string{"app.kubernetes.io/managed-by": "etcd-operator"}},
				Type: corev1.SecretTypeTLS,
				Data: b.Data(),
			}
			err = p.c.Create(ctx, &s)
			if apierrors.IsAlreadyExists(err) {
				lastErr = err
				continue
			}
			if err != nil {
				return nil, err
			}
			p.o.Log.Info("created the webhook certificate Secret", "secret", key.String(), "names", p.names)
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		cur := BundleFromData(s.Data)
		plan, reason := Decide(cur, p.names, p.o.now())
		if plan == Keep {
			return cur, nil
		}
		b, err := Renew(cur, plan, p.names, p.o.now())
		if err != nil {
			return nil, err
		}
		// Other keys and the Secret's type are kept: the type is immutable, and a
		// Secret someone pre-created with more keys should keep them.
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range b.Data() {
			s.Data[k] = v
		}
		err = p.c.Update(ctx, &s)
		if apierrors.IsConflict(err) {
			lastErr = err
			continue
		}
		if err != nil {
			return nil, err
		}
		p.o.Log.Info("renewed the webhook certificate", "secret", key.String(), "action", plan.String(), "reason", reason)
		return b, nil
	}
	return nil, fmt.Errorf("gave up after repeated races with other writers: %w", lastErr)
}

// injectCABundle sets a CRD's conversion caBundle (and Service reference) if needed; see
// the package comment for what is left alone.
func (p *Provisioner) injectCABundle(ctx context.Context, name string, ca []byte) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := p.c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
		if apierrors.IsNotFound(err) {
			p.o.Log.V(1).Info("CRD not installed; no caBundle to inject", "crd", name)
			return nil
		}
		return err
	}
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
		p.o.Log.V(1).Info("CRD does not use a conversion webhook; left alone", "crd", name)
		return nil
	}
	if conv.Webhook != nil && conv.Webhook.ClientConfig != nil && conv.Webhook.ClientConfig.URL != nil {
		p.o.Log.V(1).Info("CRD conversion webhook is a URL, not our Service; left alone", "crd", name)
		return nil
	}
	orig := crd.DeepCopy()
	if conv.Webhook == nil {
		conv.Webhook = &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}
	}
	if conv.Webhook.ClientConfig == nil {
		conv.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{}
	}
	cc := conv.Webhook.ClientConfig
	if cc.Service == nil {
		cc.Service = &apiextensionsv1.ServiceReference{}
	}
	if cc.Service.Namespace != p.o.Namespace || cc.Service.Name != p.o.ServiceName {
		if cc.Service.Name != "" {
			p.o.Log.Info("pointing the CRD's conversion webhook at this operator's Service",
				"crd", name, "was", cc.Service.Namespace+"/"+cc.Service.Name, "now", p.o.Namespace+"/"+p.o.ServiceName)
		}
		cc.Service.Namespace, cc.Service.Name = p.o.Namespace, p.o.ServiceName
	}
	if cc.Service.Path == nil {
		cc.Service.Path = ptr.To(p.o.Path)
	}
	if cc.Service.Port == nil {
		cc.Service.Port = ptr.To(p.o.Port)
	}
	cc.CABundle = ca
	if equality.Semantic.DeepEqual(orig.Spec.Conversion, crd.Spec.Conversion) {
		return nil
	}
	// A merge patch of the changed fields only: concurrent edits elsewhere in the CRD
	// (a kubectl apply of a new schema, say) are not overwritten.
	if err := p.c.Patch(ctx, &crd, client.MergeFrom(orig)); err != nil {
		return err
	}
	p.o.Log.Info("injected the webhook CA into the CRD", "crd", name)
	return nil
}

// WriteFiles writes b's serving pair to dir as tls.crt and tls.key (the names the
// controller-runtime webhook server reads), each replaced atomically and only if it
// changed, and reports whether anything was written. The key is written first: a reload
// between the two renames sees a mismatched pair, which the server's certificate watcher
// rejects and retries on the next change, so it never serves a half-written file.
func WriteFiles(dir string, b *Bundle) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	changed := false
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{KeyKey, b.Key, 0o600}, {KeyCert, b.Cert, 0o644}} {
		path := filepath.Join(dir, f.name)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, f.data) {
			continue
		}
		if err := writeAtomic(path, f.data, f.mode); err != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
