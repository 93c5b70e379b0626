package etcdcluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
	"github.com/etcd-operator/etcd-operator/internal/certmanager"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// cert-manager issuing (spec.TLS.certManager; v1's spec.tls.issuer.issuerRef), the
// controller's part. It plugs in where built-in issuing does (act_builtintls.go): the
// operator keeps three Certificates owned by the cluster, reads the Secrets cert-manager
// writes for them, and copies them into generation Secrets of its own, one generation
// per change (certmanager.Decide: a renewal by the same CA is one generation, a new CA
// three), recorded in the Secret <cluster>-cm-tls-state. The reconcile then goes on with
// spec.TLS.static pointing at the generation in effect, in memory only, so turning TLS on
// and rolling members onto a generation (after tlsproof proves old and new trust each
// other) are the static paths, unchanged.
//
// Copies, not cert-manager's Secrets themselves: cert-manager rewrites its Secret in
// place, the kubelet would hand every member the new certificate at its own moment, and
// a new CA would reach members before they trust it. A generation's Secrets are written
// before the state names them and never changed after.

// LabelCertManagerTLS marks the Secrets cert-manager issuing writes.
const LabelCertManagerTLS = "etcd.database.coreos.com/cert-manager-tls"

// Keys of the state Secret.
const (
	cmStateGeneration = "generation"
	cmStateSince      = "since"
)

// certificateGVK is cert-manager's Certificate, watched only where its CRD is served.
var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// CertManagerClientSecret is the Secret the clients of a cluster with cert-manager
// issuing mount (certmanager.ClientSecretName).
func CertManagerClientSecret(cluster string) string { return certmanager.ClientSecretName(cluster) }

// certManagerPending is cert-manager issuing waiting on cert-manager: reported in
// CertificatesValid, but the reconcile goes on (on the generation in effect, or in
// plaintext when there is none yet). It carries a reason and an error as reasonError
// (status_report.go) does, but is a type of its own: tlsPending looks for it, and
// errors.As for a *reasonError does not find it.
type certManagerPending struct{ reasonError }

// tlsPending reports whether err only says certificates are not issued yet.
func tlsPending(err error) bool {
	var p *certManagerPending
	return errors.As(err, &p)
}

// watchCertificates watches the Certificates clusters own, where the API server serves
// them (and the scheme knows them): a renewal cert-manager writes wakes the cluster at
// once. Without them the operator starts all the same; a cluster asking for issuerRef
// then reports CertManagerNotInstalled and is looked at again every resync (30 s), as
// it is if cert-manager is installed after the operator started. The Certificates come
// from a cache of their own that lists only the operator's (render.OwnedSelector):
// the manager's cache would need cert-manager's CRD to exist when it is made.
func (r *Reconciler) watchCertificates(mgr ctrl.Manager, b *builder.Builder) error {
	if !mgr.GetScheme().Recognizes(certificateGVK) {
		return nil
	}
	if _, err := mgr.GetRESTMapper().RESTMapping(certificateGVK.GroupKind(), certificateGVK.Version); err != nil {
		mgr.GetLogger().Info("cert-manager's Certificates are not served: not watching them", "reason", err.Error())
		return nil
	}
	own, err := cache.New(mgr.GetConfig(), certificatesCacheOptions(r.WatchNamespace,
		cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()}))
	if err != nil {
		return fmt.Errorf("certificates cache: %w", err)
	}
	if err := mgr.Add(own); err != nil {
		return err
	}
	b.WatchesRawSource(source.Kind(own, &cmv1.Certificate{},
		handler.TypedEnqueueRequestForOwner[*cmv1.Certificate](mgr.GetScheme(), mgr.GetRESTMapper(), &etcdv1beta2.EtcdCluster{}, handler.OnlyControllerOwner())))
	return nil
}

// certificatesCacheOptions is the Certificates cache's: only the operator's, and only
// in the watched namespace when the operator has one (--watch-namespace), where a
// namespaced Role is all it may be granted: a cluster-wide list would be refused, the
// cache would never sync and the manager would not start.
func certificatesCacheOptions(watchNamespace string, opts cache.Options) cache.Options {
	opts.DefaultLabelSelector = render.OwnedSelector()
	opts.DefaultTransform = cache.TransformStripManagedFields()
	if watchNamespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{watchNamespace: {}}
	}
	return opts
}

// checkClusterIssuer refuses a ClusterIssuer the operator does not lend
// (Reconciler.ClusterIssuers); an Issuer, in the cluster's own namespace, is the
// tenant's own and always allowed. Refused, the cluster is as if waiting on cert-manager:
// no Certificate is made or changed, and a cluster already running a generation (the
// flag narrowed since) goes on with it, the refusal said in CertificatesValid.
func (r *Reconciler) checkClusterIssuer(t *etcdv1beta2.CertManagerTLS) error {
	if t.IssuerRef.Kind != cmv1.ClusterIssuerKind {
		return nil
	}
	for _, n := range r.ClusterIssuers {
		if n == "*" || n == t.IssuerRef.Name {
			return nil
		}
	}
	return &certManagerPending{reasonError{etcdv1beta2.ReasonClusterIssuerNotAllowed, fmt.Errorf(
		"spec.tls.issuer.issuerRef: ClusterIssuer %q is not one the operator lends (--allowed-cluster-issuers); "+
			"use an Issuer in the cluster's namespace, or ask the operator's administrator to allow it", t.IssuerRef.Name)}}
}

func certManagerRef(t *etcdv1beta2.CertManagerTLS) certmanager.Ref {
	ref := certmanager.Ref{Name: t.IssuerRef.Name, Kind: t.IssuerRef.Kind, Group: t.IssuerRef.Group}
	if t.CertificateLifetime != nil {
		ref.Duration = t.CertificateLifetime.Duration
	}
	if t.RenewBefore != nil {
		ref.RenewBefore = t.RenewBefore.Duration
	}
	return ref
}

// resolveCertManagerTLS keeps the cluster's Certificates, moves to a new generation when
// cert-manager wrote something new and it is safe to, and points c's spec.TLS.static at
// the generation in effect (as resolveBuiltinTLS does). Waiting on cert-manager is a
// *certManagerPending. It does nothing for a cluster without spec.TLS.certManager.
func (r *Reconciler) resolveCertManagerTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster, w *statusWriter) error {
	if c.Spec.TLS == nil || c.Spec.TLS.CertManager == nil {
		if r.cmSettle != nil {
			r.cmSettle.forget(clusterKey(c))
		}
		return nil
	}
	now := r.Now()
	gen, since, err := r.certManagerState(ctx, c)
	if err != nil {
		return err
	}
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		return err
	}
	mounted, other := mountedCertManagerGeneration(c, pods)
	switch {
	case mounted == 0 && other != "":
		// The members run TLS from elsewhere (built-in issuing, static Secrets): a first
		// generation trusting cert-manager's CA alone would be refused by every member
		// (TLSChangeRefused) while the certificates they run are no longer renewed.
		// Refused here, loudly, before anything is written.
		return &builtinTLSError{etcdv1beta2.ReasonTLSChangeRefused, fmt.Errorf(
			"members run on the TLS Secret %q, not a cert-manager issuing generation: a running TLS cluster is not moved to "+
				"spec.tls.issuer.issuerRef (its members do not trust cert-manager's CA); set spec.tls back to what the members run, "+
				"or move the data to a new cluster with cert-manager issuing", other)}
	case mounted > gen:
		// The state Secret is behind what members run (lost, or restored from an old
		// copy): the generation they run is the one in effect.
		gen, since = mounted, time.Time{}
	}
	// No member runs a generation (a plaintext cluster, or none yet): nobody needs the
	// one recorded to be kept or to trust what comes next, so cert-manager's certificates
	// are taken as they are. A state left from an earlier time with cert-manager issuing
	// (perhaps expired) is replaced so, not waited on.
	free := mounted == 0
	var cur *certissue.Leaves
	if gen > 0 {
		l, err := r.certManagerGeneration(ctx, c, gen)
		if err != nil {
			return err
		}
		cur = &l
	}
	return r.resolveCertManagerFrom(ctx, c, w, now, gen, cur, since, free)
}

// resolveCertManagerFrom moves from cur (the generation in effect, numbered gen; nil:
// none) to what cert-manager wrote when safe, and points c at the generation in effect.
// free: no member runs cur, so what cert-manager wrote replaces it in one step.
func (r *Reconciler) resolveCertManagerFrom(ctx context.Context, c *etcdv1beta2.EtcdCluster, w *statusWriter, now time.Time, gen int, cur *certissue.Leaves, since time.Time, free bool) error {
	var in certissue.Leaves
	var issuing []string
	pending := r.checkClusterIssuer(c.Spec.TLS.CertManager)
	if pending == nil {
		var err error
		if in, issuing, pending, err = r.certManagerIssued(ctx, c, now); err != nil {
			return err
		}
	}
	if pending != nil {
		// Waiting on cert-manager: the Certificates' updates wake the cluster, not a
		// settle or dwell wish of an earlier look (which would be in the past soon).
		r.cmSettle.wake(clusterKey(c), now, 0)
	} else {
		var d certmanager.Decision
		switch {
		case free && cur != nil && !certmanager.Same(*cur, in):
			d = certmanager.Decision{Step: certmanager.First, Next: in,
				Reason: "no member runs the generation in effect: cert-manager's certificates as they are"}
		case !free || cur == nil:
			d = certmanager.Decide(cur, since, in, r.certManagerRolledOut(ctx, c, gen), now, certmanager.CAStepDwell)
		}
		if d.Step != certmanager.Keep && d.Step != certmanager.DropOldCA && cur != nil {
			// cert-manager renews each Certificate on its own: three renewed together
			// land moments apart. What it wrote is taken once none is issuing and it
			// has been still for certManagerQuiet, so they make one generation, not up
			// to three (the Certificates' updates wake the reconcile).
			if len(issuing) > 0 {
				d = certmanager.Decision{Reason: fmt.Sprintf("cert-manager is issuing %v", issuing)}
			} else if wait := r.cmSettle.still(clusterKey(c), in, now); wait > 0 {
				d = certmanager.Decision{Reason: "waiting for cert-manager's Secrets to settle", Wait: wait}
			}
		}
		r.cmSettle.wake(clusterKey(c), now, d.Wait)
		if d.Step != certmanager.Keep {
			next, err := r.writeCertManagerGeneration(ctx, c, gen, d.Next, now)
			if err != nil {
				return err
			}
			gen, cur = next, &d.Next
			r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonCertificatesIssued,
				"certificates generation %d from cert-manager (%s): %s", gen, d.Step, d.Reason)
		}
	}
	if cur == nil {
		return pending // nothing to run on yet: the cluster stays as it is (plaintext)
	}
	peer, server, operator := certmanager.GenerationSecrets(c.Name, gen)
	if err := r.syncClientSecret(ctx, c, operator, CertManagerClientSecret(c.Name), certManagerIssuing); err != nil {
		return err
	}
	useStaticTLS(c, w, &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: peer, ServerSecret: server},
		OperatorSecret: operator,
	})
	return pending
}

// useStaticTLS points the in-memory spec (and the status writer's base, so the flush
// does not see a spec change) at the generation Secrets in effect.
func useStaticTLS(c *etcdv1beta2.EtcdCluster, w *statusWriter, st *etcdv1beta2.StaticTLS) {
	c.Spec.TLS.Static = st
	if w != nil {
		if w.base.Spec.TLS == nil {
			w.base.Spec.TLS = &etcdv1beta2.TLSPolicy{}
		}
		w.base.Spec.TLS.Static = c.Spec.TLS.Static.DeepCopy()
		w.resolvedTLS = c.Spec.TLS.Static.DeepCopy()
	}
}

// observeCertManagerTLS points a paused cluster with cert-manager issuing at the
// generation in effect, writing nothing, so it is observed over the scheme and with the
// client certificate its members serve (as observeBuiltinTLS does for built-in issuing).
func (r *Reconciler) observeCertManagerTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster, w *statusWriter) {
	if st, err := r.certManagerStatic(ctx, c); err == nil && st != nil {
		useStaticTLS(c, w, st)
	}
}

// certManagerIssued keeps the cluster's three Certificates as the spec wants them and
// reads what cert-manager wrote for them; pending says why that is not usable yet.
func (r *Reconciler) certManagerIssued(ctx context.Context, c *etcdv1beta2.EtcdCluster, now time.Time) (in certissue.Leaves, issuing []string, pending, err error) {
	names, err := r.builtinNames(ctx, c, true)
	if err != nil {
		return in, nil, nil, err
	}
	ref := certManagerRef(c.Spec.TLS.CertManager)
	var bundles [][]byte
	var notReady []error
	for _, kind := range certmanager.Kinds {
		name := certmanager.CertificateName(c.Name, kind)
		cert, err := r.ensureCertificate(ctx, c, name, certmanager.Spec(kind, names, ref))
		switch {
		case meta.IsNoMatchError(err):
			return in, nil, &certManagerPending{reasonError{etcdv1beta2.ReasonCertManagerNotInstalled, fmt.Errorf(
				"spec.tls.issuer.issuerRef: the API server serves no certificates.cert-manager.io/v1; install cert-manager")}}, nil
		case err != nil:
			return in, nil, nil, err
		}
		if err := certmanager.Ready(cert); err != nil {
			notReady = append(notReady, err)
			continue
		}
		if certmanager.Issuing(cert) {
			issuing = append(issuing, name)
		}
		var s corev1.Secret
		// cert-manager's Secret is not the cluster's: read, never written.
		if err := r.secretReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: cert.Spec.SecretName}, &s); err != nil {
			if !apierrors.IsNotFound(err) {
				return in, nil, nil, fmt.Errorf("get secret %q: %w", cert.Spec.SecretName, err)
			}
			notReady = append(notReady, &certmanager.NotReady{Certificate: name, Why: fmt.Sprintf("Secret %q not written yet", cert.Spec.SecretName)})
			continue
		}
		kp, bundle, err := certmanager.Read(name, kind, s.Data, names, now)
		if err != nil {
			notReady = append(notReady, err)
			continue
		}
		bundles = append(bundles, bundle)
		switch kind {
		case certissue.KindPeer:
			in.Peer = kp
		case certissue.KindServer:
			in.Server = kp
		default:
			in.Client = kp
		}
	}
	if len(notReady) > 0 {
		return in, nil, &certManagerPending{reasonError{etcdv1beta2.ReasonCertificateNotReady, errors.Join(notReady...)}}, nil
	}
	trust, err := certissue.MergeBundle(bundles...)
	if err != nil {
		return in, nil, nil, err
	}
	in.Trust = trust
	return in, issuing, nil, nil
}

// ensureCertificate creates or updates the Certificate name with spec; one of that name
// the cluster does not control is reported, never changed.
func (r *Reconciler) ensureCertificate(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, spec cmv1.CertificateSpec) (*cmv1.Certificate, error) {
	var cur cmv1.Certificate
	err := r.secretReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &cur)
	if apierrors.IsNotFound(err) {
		// cert-manager writes the Certificate's Secret whatever is there: a Secret of
		// that name it did not write for this Certificate (the tenant's, another
		// tool's) would be overwritten. Refused before the Certificate exists.
		var s corev1.Secret
		switch err := r.secretReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: spec.SecretName}, &s); {
		case err == nil && s.Annotations[cmv1.CertificateNameKey] != name:
			return nil, &builtinTLSError{etcdv1beta2.ReasonCertificateSecretInvalid, fmt.Errorf(
				"secret %q exists and was not written by cert-manager for Certificate %q: it would be overwritten; rename or delete it",
				spec.SecretName, name)}
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get secret %q: %w", spec.SecretName, err)
		}
		obj := &cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: render.ClusterLabels(c.Name)}, Spec: spec}
		if err := controllerutil.SetControllerReference(c, obj, r.Scheme); err != nil {
			return nil, err
		}
		if err := r.Client.Create(ctx, obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	if err != nil {
		return nil, err
	}
	if !metav1IsControlledBy(&cur, c) {
		return nil, &builtinTLSError{etcdv1beta2.ReasonCertificateIssueFailed,
			fmt.Errorf("Certificate %q exists and is not this cluster's: the operator makes it for spec.tls.issuer.issuerRef; rename or delete it", name)}
	}
	// Only the fields the operator sets are compared and written: a field defaulted by
	// cert-manager's CRD or webhook must not make an update (and a new issuance) at
	// every reconcile.
	next := cur.Spec.DeepCopy()
	next.SecretName, next.CommonName, next.IssuerRef = spec.SecretName, spec.CommonName, spec.IssuerRef
	next.Usages, next.DNSNames, next.IPAddresses = spec.Usages, spec.DNSNames, spec.IPAddresses
	next.Duration, next.RenewBefore = spec.Duration, spec.RenewBefore
	if next.PrivateKey == nil {
		next.PrivateKey = &cmv1.CertificatePrivateKey{}
	}
	next.PrivateKey.Algorithm, next.PrivateKey.Size, next.PrivateKey.RotationPolicy =
		spec.PrivateKey.Algorithm, spec.PrivateKey.Size, spec.PrivateKey.RotationPolicy
	if apiequality.Semantic.DeepEqual(cur.Spec, *next) {
		return &cur, nil
	}
	cur.Spec = *next
	if err := r.Client.Update(ctx, &cur); err != nil {
		return nil, fmt.Errorf("update Certificate %q: %w", name, err)
	}
	return &cur, nil
}

// certManagerState is the generation in effect (0: none yet) and when it took effect.
func (r *Reconciler) certManagerState(ctx context.Context, c *etcdv1beta2.EtcdCluster) (int, time.Time, error) {
	s, err := r.getOwnedSecret(ctx, c, certmanager.StateSecretName(c.Name), certManagerIssuing)
	if err != nil || s == nil {
		return 0, time.Time{}, err
	}
	gen, err := strconv.Atoi(string(s.Data[cmStateGeneration]))
	if err != nil || gen < 0 {
		return 0, time.Time{}, &builtinTLSError{etcdv1beta2.ReasonCertificateSecretInvalid,
			fmt.Errorf("secret %q: %s is not a generation", s.Name, cmStateGeneration)}
	}
	since, _ := time.Parse(time.RFC3339, string(s.Data[cmStateSince])) // unreadable: long ago
	return gen, since, nil
}

// certManagerGeneration reads generation gen's Secrets.
func (r *Reconciler) certManagerGeneration(ctx context.Context, c *etcdv1beta2.EtcdCluster, gen int) (certissue.Leaves, error) {
	peer, server, cl := certmanager.GenerationSecrets(c.Name, gen)
	var l certissue.Leaves
	for _, x := range []struct {
		name, certKey, keyKey, caKey string
		out                          *certissue.KeyPair
	}{
		{peer, peerCertKey, peerKeyKey, peerCAKey, &l.Peer},
		{server, serverCertKey, serverKeyKey, serverCAKey, &l.Server},
		{cl, etcdadmin.ClientCertKey, etcdadmin.ClientKeyKey, etcdadmin.ClientCAKey, &l.Client},
	} {
		s, err := r.getOwnedSecret(ctx, c, x.name, certManagerIssuing)
		if err != nil {
			return l, err
		}
		if s == nil {
			return l, &builtinTLSError{etcdv1beta2.ReasonCertificateSecretInvalid,
				fmt.Errorf("secret %q of the generation in effect is gone", x.name)}
		}
		*x.out = certissue.KeyPair{CertPEM: s.Data[x.certKey], KeyPEM: s.Data[x.keyKey]}
		if len(l.Trust) == 0 {
			l.Trust = s.Data[x.caKey]
		}
	}
	return l, nil
}

// writeCertManagerGeneration writes the generation after prev, then the state naming it,
// and returns its number. A generation's Secrets are never rewritten with other data
// (a member may mount them: the state was lost or reset, or an operator stopped between
// the Secrets and the state and cert-manager renewed meanwhile): a number whose Secrets
// exist with other contents is skipped, up to maxGenerationSkip.
func (r *Reconciler) writeCertManagerGeneration(ctx context.Context, c *etcdv1beta2.EtcdCluster, prev int, l certissue.Leaves, now time.Time) (int, error) {
	gen := 0
	for n := prev + 1; n <= prev+maxGenerationSkip && gen == 0; n++ {
		free, err := r.certManagerGenerationFree(ctx, c, n, l)
		if err != nil {
			return 0, err
		}
		if free {
			gen = n
		}
	}
	if gen == 0 {
		return 0, &builtinTLSError{etcdv1beta2.ReasonCertificateSecretInvalid, fmt.Errorf(
			"the Secrets of generations %d to %d exist with other certificates: not overwritten; delete those no member pod mounts",
			prev+1, prev+maxGenerationSkip)}
	}
	for name, data := range certManagerGenerationData(c.Name, gen, l) {
		if err := r.putOwnedSecret(ctx, c, name, certManagerIssuing, data); err != nil {
			return 0, err
		}
	}
	state := map[string][]byte{cmStateGeneration: []byte(strconv.Itoa(gen)), cmStateSince: []byte(now.UTC().Format(time.RFC3339))}
	name := certmanager.StateSecretName(c.Name)
	cur, err := r.getOwnedSecret(ctx, c, name, certManagerIssuing)
	if err != nil {
		return 0, err
	}
	if cur != nil {
		// On the version read: a concurrent writer makes this fail and the reconcile
		// start over. A state behind prev (members run a later generation than it
		// names) is brought forward.
		if g, _ := strconv.Atoi(string(cur.Data[cmStateGeneration])); g > prev {
			return 0, fmt.Errorf("secret %q moved to generation %d meanwhile", name, g)
		}
		cur.Data = state
		if err := r.Client.Update(ctx, cur); err != nil {
			return 0, fmt.Errorf("update secret %q: %w", name, err)
		}
		return gen, nil
	}
	return gen, r.putOwnedSecret(ctx, c, name, certManagerIssuing, state)
}

// maxGenerationSkip bounds the generation numbers tried past the one in effect.
const maxGenerationSkip = 16

// certManagerGenerationData is what generation gen's Secrets hold for l.
func certManagerGenerationData(cluster string, gen int, l certissue.Leaves) map[string]map[string][]byte {
	peer, server, cl := certmanager.GenerationSecrets(cluster, gen)
	return map[string]map[string][]byte{
		peer:   {peerCertKey: l.Peer.CertPEM, peerKeyKey: l.Peer.KeyPEM, peerCAKey: l.Trust},
		server: {serverCertKey: l.Server.CertPEM, serverKeyKey: l.Server.KeyPEM, serverCAKey: l.Trust},
		cl:     {etcdadmin.ClientCertKey: l.Client.CertPEM, etcdadmin.ClientKeyKey: l.Client.KeyPEM, etcdadmin.ClientCAKey: l.Trust},
	}
}

// certManagerGenerationFree: generation gen's Secrets are absent or already hold l
// (an operator stopped between them and the state).
func (r *Reconciler) certManagerGenerationFree(ctx context.Context, c *etcdv1beta2.EtcdCluster, gen int, l certissue.Leaves) (bool, error) {
	for name, data := range certManagerGenerationData(c.Name, gen, l) {
		s, err := r.getOwnedSecret(ctx, c, name, certManagerIssuing)
		if err != nil {
			return false, err
		}
		if s != nil && !sameData(s.Data, data) {
			return false, nil
		}
	}
	return true, nil
}

// mountedCertManagerGeneration is the newest cert-manager issuing generation whose peer
// Secret a member pod of c mounts (0: none), and a peer Secret of another kind a member
// mounts ("" : none), which says the members run TLS from elsewhere.
func mountedCertManagerGeneration(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) (newest int, other string) {
	prefix := c.Name + "-cm-tls-"
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || !metav1IsControlledBy(p, c) {
			continue
		}
		name := render.PodSecretVolume(p, volumePeerTLS)
		if name == "" {
			continue
		}
		rest, ok := strings.CutPrefix(name, prefix)
		num, ok2 := strings.CutSuffix(rest, "-peer")
		g, err := strconv.Atoi(num)
		if !ok || !ok2 || err != nil || g <= 0 {
			other = name
			continue
		}
		if peer, _, _ := certmanager.GenerationSecrets(c.Name, g); peer != name {
			other = name
			continue
		}
		newest = max(newest, g)
	}
	return newest, other
}

// livePods counts c's member pods not being deleted.
func livePods(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if pods[i].DeletionTimestamp == nil && metav1IsControlledBy(&pods[i], c) {
			n++
		}
	}
	return n
}

// certManagerRolledOut: every member pod runs generation gen, and there are as many as
// the spec asks for (rolledOutTo, as for built-in issuing).
func (r *Reconciler) certManagerRolledOut(ctx context.Context, c *etcdv1beta2.EtcdCluster, gen int) bool {
	if gen == 0 {
		return true
	}
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		return false
	}
	peer, server, _ := certmanager.GenerationSecrets(c.Name, gen)
	return rolledOutTo(c, pods, peer, server)
}

// certManagerWarnWithin: cert-manager renews by itself, so CertificatesValid warns once
// half the renewal window is gone by without a renewal (as for built-in issuing), and
// 30 days before expiry at the latest.
func certManagerWarnWithin(t *etcdv1beta2.CertManagerTLS) time.Duration {
	lifetime := 2160 * time.Hour // cert-manager's default duration
	if t.CertificateLifetime != nil {
		lifetime = t.CertificateLifetime.Duration
	}
	renew := lifetime / 3 // cert-manager's default renewBefore
	if t.RenewBefore != nil {
		renew = t.RenewBefore.Duration
	}
	return min(certissue.WarnWithin, renew/2)
}

// certManagerQuiet is how long what cert-manager wrote must stay unchanged before a
// renewal takes it.
const certManagerQuiet = 5 * time.Second

// cmSettle remembers, per cluster, what cert-manager last wrote and since when, and when
// the cluster wants to be looked at again (a settle or a CA step's dwell running out).
// In memory only: an operator restarted waits the quiet period again.
type cmSettle struct {
	mu     sync.Mutex
	seen   map[string]cmSeen
	wakeAt map[string]time.Time
}

type cmSeen struct {
	digest [sha256.Size]byte
	since  time.Time
}

func newCMSettle() *cmSettle {
	return &cmSettle{seen: map[string]cmSeen{}, wakeAt: map[string]time.Time{}}
}

// still is how much longer in must stay unchanged (0: it has been still long enough).
// One record per cluster with cert-manager issuing, dropped when it has none.
func (s *cmSettle) still(key string, in certissue.Leaves, now time.Time) time.Duration {
	h := sha256.New()
	for _, b := range [][]byte{in.Peer.CertPEM, in.Peer.KeyPEM, in.Server.CertPEM, in.Server.KeyPEM, in.Client.CertPEM, in.Client.KeyPEM, in.Trust} {
		_, _ = fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	var d [sha256.Size]byte
	copy(d[:], h.Sum(nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.seen[key]
	if !ok || seen.digest != d {
		s.seen[key] = cmSeen{digest: d, since: now}
		return certManagerQuiet
	}
	return max(certManagerQuiet-now.Sub(seen.since), 0)
}

// wake records when the cluster wants a reconcile (after is 0: no wish).
func (s *cmSettle) wake(key string, now time.Time, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if after <= 0 {
		delete(s.wakeAt, key)
		return
	}
	s.wakeAt[key] = now.Add(after)
}

// forget drops what is remembered of a cluster (namespace/name).
func (s *cmSettle) forget(key string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.seen, key)
	delete(s.wakeAt, key)
}

// requeue brings result's requeue forward to the cluster's wish, if it has one. looked
// is when this reconcile looked at the certificates (before acting), now when it ends.
func (s *cmSettle) requeue(key string, looked, now time.Time, result ctrl.Result) ctrl.Result {
	if s == nil {
		return result
	}
	s.mu.Lock()
	at, ok := s.wakeAt[key]
	s.mu.Unlock()
	if !ok {
		return result
	}
	if !at.After(looked) {
		// A wish that was due when this reconcile looked was for it: asking again in a
		// second would look every second for as long as nothing else resets it. One
		// that fell due later (while acting) has not been looked for: it is kept, and
		// asked for in a second at least.
		s.mu.Lock()
		if s.wakeAt[key].Equal(at) {
			delete(s.wakeAt, key)
		}
		s.mu.Unlock()
		return result
	}
	d := max(at.Sub(now), time.Second)
	if result.RequeueAfter == 0 || d < result.RequeueAfter {
		result.RequeueAfter = d
	}
	return result
}

// certManagerStatic is the spec.TLS.static of the generation in effect of a cluster with
// cert-manager issuing, read only (nil when it has none yet, or no cert-manager
// issuing): for observing a paused cluster over TLS without touching anything.
func (r *Reconciler) certManagerStatic(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*etcdv1beta2.StaticTLS, error) {
	if c.Spec.TLS == nil || c.Spec.TLS.CertManager == nil {
		return nil, nil
	}
	gen, _, err := r.certManagerState(ctx, c)
	if err != nil || gen == 0 {
		return nil, err
	}
	peer, server, operator := certmanager.GenerationSecrets(c.Name, gen)
	return &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: peer, ServerSecret: server}, OperatorSecret: operator}, nil
}
