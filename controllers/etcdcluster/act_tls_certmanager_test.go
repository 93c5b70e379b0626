package etcdcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
	"github.com/etcd-operator/etcd-operator/internal/certmanager"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/cmissuer"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// cmFixture is a cluster with spec.TLS.certManager over a fake client, the test CA
// issuer (internal/test/cmissuer) fulfilling its Certificates on demand, and a clock
// the test moves.
type cmFixture struct {
	t       *testing.T
	c       client.Client
	r       *Reconciler
	cluster *etcdv1beta2.EtcdCluster
	issuer  *cmissuer.Issuer
	now     time.Time
}

func newCMFixture(t *testing.T, objs ...client.Object) *cmFixture {
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "uid-db"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16", TLS: &etcdv1beta2.TLSPolicy{CertManager: &etcdv1beta2.CertManagerTLS{
			IssuerRef: etcdv1beta2.CertManagerIssuerRef{Name: "ca"}, CertificateLifetime: &metav1.Duration{Duration: 24 * time.Hour}}}},
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db-client", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10", "fd00::10"}}}
	f := &cmFixture{t: t, cluster: cluster, now: time.Now().Truncate(time.Second)}
	f.c = fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(append([]client.Object{cluster, svc}, objs...)...).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}, &cmv1.Certificate{}).Build()
	f.r = newTestClusterReconciler(t, f.c, record.NewFakeRecorder(100), func() time.Time { return f.now })
	f.r.ClusterDomain = "cluster.local"
	f.issuer = &cmissuer.Issuer{C: f.c, Namespace: "default", Name: "ca", Now: func() time.Time { return f.now }}
	return f
}

func (f *cmFixture) resolve() (*etcdv1beta2.EtcdCluster, error) {
	f.t.Helper()
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.cluster), &c); err != nil {
		f.t.Fatal(err)
	}
	w := f.r.statusWriterFor(&c)
	err := f.r.resolveCertManagerTLS(context.Background(), &c, w)
	if c.Spec.TLS.Static != nil && (w.base.Spec.TLS.Static == nil || *w.base.Spec.TLS.Static.Member != *c.Spec.TLS.Static.Member) {
		f.t.Errorf("the status writer's base does not hold the resolved Secrets: the status patch would carry them")
	}
	return &c, err
}

// resolveOn resolves and wants the cluster on generation gen.
func (f *cmFixture) resolveOn(gen int) *etcdv1beta2.EtcdCluster {
	f.t.Helper()
	c, err := f.resolve()
	if err != nil {
		f.t.Fatalf("resolve: %v", err)
	}
	peer, server, op := certmanager.GenerationSecrets("db", gen)
	if c.Spec.TLS.Static == nil || c.Spec.TLS.Static.Member.PeerSecret != peer || c.Spec.TLS.Static.Member.ServerSecret != server ||
		c.Spec.TLS.Static.OperatorSecret != op {
		f.t.Fatalf("static TLS %+v, want generation %d", c.Spec.TLS.Static, gen)
	}
	return c
}

// settle resolves once on generation gen, which sees what cert-manager wrote and waits
// for it to stay still, and moves the clock past that wait.
func (f *cmFixture) settle(gen int) {
	f.t.Helper()
	f.resolveOn(gen)
	f.now = f.now.Add(certManagerQuiet)
}

func (f *cmFixture) secret(name string) *corev1.Secret {
	return secretOrNil(f.c, name)
}

func (f *cmFixture) issue() {
	f.t.Helper()
	if _, err := f.issuer.Sync(context.Background()); err != nil {
		f.t.Fatalf("test issuer: %v", err)
	}
}

func (f *cmFixture) forceRenewal() {
	f.t.Helper()
	for _, k := range certmanager.Kinds {
		if err := cmissuer.ForceRenewal(context.Background(), f.c, "default", certmanager.CertificateName("db", k)); err != nil {
			f.t.Fatal(err)
		}
	}
	f.issue()
}

// allOn puts the three member pods on generation gen's Secrets (0: plaintext).
func (f *cmFixture) allOn(gen int) {
	f.t.Helper()
	peer, server, _ := certmanager.GenerationSecrets("db", gen)
	f.allOnSecrets(map[bool][2]string{true: {peer, server}}[gen > 0])
}

// allOnSecrets puts the three member pods on these peer and server Secrets (empty:
// plaintext).
func (f *cmFixture) allOnSecrets(s [2]string) {
	f.t.Helper()
	peer, server := s[0], s[1]
	ctx := context.Background()
	for _, n := range []string{"db-aaaa", "db-bbbb", "db-cccc"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default", Labels: render.MemberLabels("db", n)}}
		if peer != "" {
			p.Spec.Volumes = []corev1.Volume{
				{Name: volumePeerTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: peer}}},
				{Name: volumeServerTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: server}}},
			}
		}
		if err := controllerutil.SetControllerReference(f.cluster, p, f.c.Scheme()); err != nil {
			f.t.Fatal(err)
		}
		_ = f.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default"}})
		if err := f.c.Create(ctx, p); err != nil {
			f.t.Fatal(err)
		}
	}
}

// trust is generation gen's CA bundle, parsed.
func (f *cmFixture) trust(gen int) [][]byte {
	f.t.Helper()
	peer, server, cl := certmanager.GenerationSecrets("db", gen)
	b := f.secret(peer).Data[peerCAKey]
	if !certissue.SameBundle(b, f.secret(server).Data[serverCAKey]) || !certissue.SameBundle(b, f.secret(cl).Data[etcdadmin.ClientCAKey]) {
		f.t.Fatalf("generation %d's Secrets trust different bundles", gen)
	}
	cas, err := certissue.ParseBundle(b)
	if err != nil {
		f.t.Fatal(err)
	}
	out := make([][]byte, len(cas))
	for i, c := range cas {
		out[i] = c.Raw
	}
	return out
}

func (f *cmFixture) leaf(gen int) []byte {
	peer, _, _ := certmanager.GenerationSecrets("db", gen)
	return f.secret(peer).Data[peerCertKey]
}

func TestCertManagerTLSWaitsThenIssuesRenewsAndRotatesCA(t *testing.T) {
	f := newCMFixture(t)
	ctx := context.Background()

	// No Issuer yet: the Certificates are made, nothing is ready, the cluster stays as
	// it is (no static Secrets), and the error says which Certificate is waiting.
	c, err := f.resolve()
	var pending *certManagerPending
	if !errors.As(err, &pending) || pending.reason != etcdv1beta2.ReasonCertificateNotReady || !strings.Contains(err.Error(), `Certificate "db-cm-peer"`) {
		t.Fatalf("resolve before issuing: %v, want CertificateNotReady naming db-cm-peer", err)
	}
	if !tlsPending(err) || c.Spec.TLS.Static != nil {
		t.Fatalf("a waiting cluster got static Secrets %+v", c.Spec.TLS.Static)
	}
	for _, k := range certmanager.Kinds {
		var cert cmv1.Certificate
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: certmanager.CertificateName("db", k)}, &cert); err != nil {
			t.Fatalf("%s Certificate: %v", k, err)
		}
		if !metav1IsControlledBy(&cert, f.cluster) || cert.Spec.IssuerRef.Name != "ca" || cert.Spec.IssuerRef.Kind != "Issuer" ||
			cert.Spec.Duration == nil || cert.Spec.Duration.Duration != 24*time.Hour {
			t.Errorf("%s Certificate: %+v", k, cert.Spec)
		}
		if k == certissue.KindServer && (!contains(cert.Spec.IPAddresses, "fd00::10") || !contains(cert.Spec.IPAddresses, "10.96.0.10") ||
			!contains(cert.Spec.DNSNames, "*.db.default.svc.cluster.local") || !contains(cert.Spec.DNSNames, "db-client.default.svc")) {
			t.Errorf("server Certificate names %v %v", cert.Spec.DNSNames, cert.Spec.IPAddresses)
		}
	}

	// The issuer writes the Secrets: generation 1, cert-manager's certificates as they are.
	if err := f.issuer.Install(ctx, "ca-key"); err != nil {
		t.Fatal(err)
	}
	f.issue()
	f.resolveOn(1)
	cmPeer := f.secret(certmanager.CertificateName("db", certissue.KindPeer))
	if string(f.leaf(1)) != string(cmPeer.Data["tls.crt"]) || len(f.trust(1)) != 1 {
		t.Fatal("generation 1 is not cert-manager's peer certificate with its CA")
	}
	clientSecret := f.secret(CertManagerClientSecret("db"))
	_, _, gen1Client := certmanager.GenerationSecrets("db", 1)
	if clientSecret == nil || !sameData(clientSecret.Data, f.secret(gen1Client).Data) {
		t.Fatal("the clients' Secret does not hold generation 1's client certificate")
	}
	f.resolveOn(1) // nothing new: no new generation
	f.allOn(0)     // members not on generation 1 yet (a plaintext cluster mid-move, say)

	// A forced renewal by the same CA: one new generation, trusted as before, but only
	// once every member runs generation 1.
	f.forceRenewal()
	f.resolveOn(1)
	f.allOn(1)
	f.settle(1)
	f.resolveOn(2)
	if string(f.leaf(2)) == string(f.leaf(1)) || len(f.trust(2)) != 1 || string(f.trust(2)[0]) != string(f.trust(1)[0]) {
		t.Fatal("generation 2 is not a renewal by the same CA")
	}

	// A new CA: trusted beside the old one first, then presented, then the old dropped,
	// each step once every member moved and (for the last two) after the dwell.
	f.allOn(2)
	if err := f.issuer.Install(ctx, "ca-key"); err != nil {
		t.Fatal(err)
	}
	f.forceRenewal()
	f.settle(2)
	f.resolveOn(3)
	if string(f.leaf(3)) != string(f.leaf(2)) || len(f.trust(3)) != 2 {
		t.Fatalf("generation 3: want generation 2's certificates trusting both CAs, got %d CAs", len(f.trust(3)))
	}
	f.allOn(3)
	f.resolveOn(3) // the dwell
	f.now = f.now.Add(certmanager.CAStepDwell)
	f.resolveOn(4)
	if string(f.leaf(4)) == string(f.leaf(3)) || len(f.trust(4)) != 2 {
		t.Fatal("generation 4: want the new CA's certificates trusting both CAs")
	}
	f.allOn(4)
	f.resolveOn(4)
	f.now = f.now.Add(certmanager.CAStepDwell)
	f.resolveOn(5)
	if string(f.leaf(5)) != string(f.leaf(4)) || len(f.trust(5)) != 1 || string(f.trust(5)[0]) == string(f.trust(1)[0]) {
		t.Fatal("generation 5: want the new CA alone")
	}
	// The clients' Secret follows the generation in effect.
	_, _, gen5Client := certmanager.GenerationSecrets("db", 5)
	if !sameData(f.secret(CertManagerClientSecret("db")).Data, f.secret(gen5Client).Data) {
		t.Error("the clients' Secret does not follow the generation in effect")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestCertManagerTLSRefusesForeignObjects(t *testing.T) {
	foreign := &cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "db-cm-server", Namespace: "default"}}
	f := newCMFixture(t, foreign)
	_, err := f.resolve()
	if err == nil || tlsPending(err) || !strings.Contains(err.Error(), `Certificate "db-cm-server" exists and is not this cluster's`) {
		t.Fatalf("resolve with a foreign Certificate: %v", err)
	}
	var cert cmv1.Certificate
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(foreign), &cert); err != nil || cert.Spec.SecretName != "" {
		t.Fatalf("the foreign Certificate was changed: %+v %v", cert.Spec, err)
	}
}

// A cert-manager Secret that does not name the members is not used: the cluster waits
// with the Certificate named.
func TestCertManagerTLSChecksWhatCertManagerWrote(t *testing.T) {
	f := newCMFixture(t)
	ctx := context.Background()
	if _, err := f.resolve(); !tlsPending(err) {
		t.Fatalf("first resolve: %v", err)
	}
	if err := f.issuer.Install(ctx, "ca-key"); err != nil {
		t.Fatal(err)
	}
	f.issue()
	// Another writer put the client certificate (no server names, no server usage)
	// into the server Secret.
	s := f.secret("db-cm-server")
	s.Data["tls.crt"] = f.secret("db-cm-client").Data["tls.crt"]
	s.Data["tls.key"] = f.secret("db-cm-client").Data["tls.key"]
	if err := f.c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	c, err := f.resolve()
	if !tlsPending(err) || !strings.Contains(err.Error(), `Certificate "db-cm-server"`) || c.Spec.TLS.Static != nil {
		t.Fatalf("resolve with a server Secret holding a client certificate: %v (static %+v)", err, c.Spec.TLS.Static)
	}
}

// Without cert-manager's CRDs the cluster says so and goes on as it is.
func TestCertManagerTLSNotInstalled(t *testing.T) {
	// What the API server's discovery answers for a kind it does not serve.
	noKind := func(obj client.Object) error {
		if _, ok := obj.(*cmv1.Certificate); ok {
			return &meta.NoKindMatchError{GroupKind: certificateGVK.GroupKind(), SearchedVersions: []string{"v1"}}
		}
		return nil
	}
	f := newCMFixture(t)
	f.c = fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(f.cluster).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := noKind(obj); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := noKind(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	f.r = newTestClusterReconciler(t, f.c, record.NewFakeRecorder(100), func() time.Time { return f.now })
	c, err := f.resolve()
	var pending *certManagerPending
	if !errors.As(err, &pending) || pending.reason != etcdv1beta2.ReasonCertManagerNotInstalled ||
		!strings.Contains(err.Error(), "spec.tls.issuer.issuerRef") || c.Spec.TLS.Static != nil {
		t.Fatalf("resolve without cert-manager: %v (static %+v)", err, c.Spec.TLS.Static)
	}
}

// The Certificates are written when they differ in what the operator sets, and only
// then: a field set by someone else (cert-manager's defaults) is kept and makes no update.
func TestCertManagerTLSCertificateUpdates(t *testing.T) {
	f := newCMFixture(t)
	ctx := context.Background()
	_, _ = f.resolve()
	key := client.ObjectKey{Namespace: "default", Name: "db-cm-server"}
	var cert cmv1.Certificate
	if err := f.c.Get(ctx, key, &cert); err != nil {
		t.Fatal(err)
	}
	cert.Spec.PrivateKey.Encoding = cmv1.PKCS8 // as a defaulting webhook might
	if err := f.c.Update(ctx, &cert); err != nil {
		t.Fatal(err)
	}
	rv := cert.ResourceVersion
	_, _ = f.resolve()
	if err := f.c.Get(ctx, key, &cert); err != nil {
		t.Fatal(err)
	}
	if cert.ResourceVersion != rv {
		t.Errorf("an unchanged Certificate was written again")
	}
	// The spec's lifetime changes: the Certificates follow, the other field kept.
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(f.cluster), &c); err != nil {
		t.Fatal(err)
	}
	c.Spec.TLS.CertManager.CertificateLifetime = &metav1.Duration{Duration: 48 * time.Hour}
	if err := f.c.Update(ctx, &c); err != nil {
		t.Fatal(err)
	}
	_, _ = f.resolve()
	if err := f.c.Get(ctx, key, &cert); err != nil {
		t.Fatal(err)
	}
	if cert.Spec.Duration == nil || cert.Spec.Duration.Duration != 48*time.Hour || cert.Spec.PrivateKey.Encoding != cmv1.PKCS8 {
		t.Errorf("after a lifetime change: duration %v, encoding %q", cert.Spec.Duration, cert.Spec.PrivateKey.Encoding)
	}
}

func TestCertManagerStatic(t *testing.T) {
	f := newCMFixture(t)
	ctx := context.Background()
	if s, err := f.r.certManagerStatic(ctx, f.cluster); s != nil || err != nil {
		t.Fatalf("before any generation: %+v %v", s, err)
	}
	_, _ = f.resolve()
	if err := f.issuer.Install(ctx, "ca-key"); err != nil {
		t.Fatal(err)
	}
	f.issue()
	want := f.resolveOn(1).Spec.TLS.Static
	if s, err := f.r.certManagerStatic(ctx, f.cluster); err != nil || s == nil || *s.Member != *want.Member || s.OperatorSecret != want.OperatorSecret {
		t.Fatalf("certManagerStatic %+v %v, want %+v", s, err, want)
	}
}

// With --watch-namespace the operator may be granted Certificates only in that
// namespace: the Certificates cache must not list them cluster-wide (its sync would be
// refused and the manager would never start).
func TestCertificatesCacheOptionsKeepTheWatchNamespace(t *testing.T) {
	opts := certificatesCacheOptions("tenant-a", cache.Options{})
	if len(opts.DefaultNamespaces) != 1 {
		t.Fatalf("DefaultNamespaces %v, want only tenant-a", opts.DefaultNamespaces)
	}
	if _, ok := opts.DefaultNamespaces["tenant-a"]; !ok {
		t.Fatalf("DefaultNamespaces %v, want only tenant-a", opts.DefaultNamespaces)
	}
	if opts.DefaultLabelSelector == nil || opts.DefaultLabelSelector.String() != render.OwnedSelector().String() {
		t.Errorf("label selector %v, want the operator's own", opts.DefaultLabelSelector)
	}
	if all := certificatesCacheOptions("", cache.Options{}); len(all.DefaultNamespaces) != 0 {
		t.Errorf("without a watch namespace: DefaultNamespaces %v, want all", all.DefaultNamespaces)
	}
}

// A wake wish that is due is spent by the reconcile that asks for the requeue: it must
// not turn into a requeue every second.
func TestCMSettleRequeueDropsAWishThatIsDue(t *testing.T) {
	s := newCMSettle()
	now := time.Now()
	s.wake("default/db", now, 5*time.Second)
	if got := s.requeue("default/db", now, now, ctrl.Result{RequeueAfter: time.Minute}); got.RequeueAfter != 5*time.Second {
		t.Fatalf("requeue before the wish: %v, want 5s", got.RequeueAfter)
	}
	later := now.Add(10 * time.Second)
	if got := s.requeue("default/db", later, later, ctrl.Result{RequeueAfter: time.Minute}); got.RequeueAfter != time.Minute {
		t.Fatalf("requeue after the wish: %v, want the reconcile's own 1m", got.RequeueAfter)
	}
	if got := s.requeue("default/db", later.Add(time.Second), later.Add(time.Second), ctrl.Result{}); got.RequeueAfter != 0 {
		t.Fatalf("the spent wish came back: %v", got.RequeueAfter)
	}
}

// A wish that falls due while the reconcile acts (after it looked at the certificates)
// has not been looked for: it is kept, as a requeue of a second, not lost.
func TestCMSettleRequeueKeepsAWishThatFellDueWhileActing(t *testing.T) {
	s := newCMSettle()
	looked := time.Now()
	s.wake("default/db", looked, 2*time.Second)
	ended := looked.Add(3 * time.Second) // act took longer than the wish's wait
	if got := s.requeue("default/db", looked, ended, ctrl.Result{RequeueAfter: time.Minute}); got.RequeueAfter != time.Second {
		t.Fatalf("requeue of a wish due while acting: %v, want 1s", got.RequeueAfter)
	}
	next := ended.Add(time.Second) // the reconcile that wish brought looked: spent
	if got := s.requeue("default/db", next, next, ctrl.Result{}); got.RequeueAfter != 0 {
		t.Fatalf("the spent wish came back: %v", got.RequeueAfter)
	}
}

// While a Certificate is not Ready the cluster waits on cert-manager's updates: a
// settle wish from an earlier look is dropped, not left to fall due.
func TestCertManagerTLSPendingClearsTheWakeWish(t *testing.T) {
	f := newCMFixture(t)
	f.r.cmSettle.wake("default/db", f.now, time.Second)
	if _, err := f.resolve(); !tlsPending(err) {
		t.Fatalf("resolve before issuing: %v, want pending", err)
	}
	f.now = f.now.Add(time.Hour)
	if got := f.r.cmSettle.requeue("default/db", f.now, f.now, ctrl.Result{}); got.RequeueAfter != 0 {
		t.Fatalf("requeue while pending: %v, want none of the settle's", got.RequeueAfter)
	}
}

// installIssuer installs the fixture's Issuer, its CA in the Secret "ca-key".
func (f *cmFixture) installIssuer() {
	f.t.Helper()
	if err := f.issuer.Install(context.Background(), "ca-key"); err != nil {
		f.t.Fatal(err)
	}
}

// issuedWithMembersOn installs the Issuer, puts every member on the peer and server
// Secrets of another TLS source (allOnSecrets), resolves once and has the Issuer issue
// what that asked for.
func (f *cmFixture) issuedWithMembersOn(peerServer [2]string) {
	f.t.Helper()
	f.installIssuer()
	f.allOnSecrets(peerServer)
	_, _ = f.resolve()
	f.issue()
}

// startOn1 brings the fixture to generation 1 with every member on it.
func (f *cmFixture) startOn1() {
	f.t.Helper()
	_, _ = f.resolve()
	f.installIssuer()
	f.issue()
	f.resolveOn(1)
	f.allOn(1)
}

// Members running built-in (or static) Secrets are not moved to cert-manager's CA,
// which they do not trust: refused, named, nothing written.
func TestCertManagerTLSRefusesASwitchFromOtherTLS(t *testing.T) {
	f := newCMFixture(t)
	f.issuedWithMembersOn([2]string{"db-builtin-tls-4-peer", "db-builtin-tls-4-server"})
	_, err := f.resolve()
	var be *builtinTLSError
	if !errors.As(err, &be) || be.reason != etcdv1beta2.ReasonTLSChangeRefused || !strings.Contains(err.Error(), `"db-builtin-tls-4-peer"`) {
		t.Fatalf("resolve on built-in members: %v, want TLSChangeRefused naming their Secret", err)
	}
	peer, _, _ := certmanager.GenerationSecrets("db", 1)
	if f.secret(peer) != nil || f.secret(certmanager.StateSecretName("db")) != nil {
		t.Fatal("a generation was written for members that would not trust it")
	}
}

// A generation no member runs (members in plaintext, a state left from earlier) is
// replaced by what cert-manager writes, even under a new CA, not waited on for ever.
func TestCertManagerTLSReplacesAGenerationNoMemberRuns(t *testing.T) {
	f := newCMFixture(t)
	f.startOn1()
	f.allOn(0)
	f.installIssuer()
	f.forceRenewal()
	f.settle(1)
	f.resolveOn(2)
	if len(f.trust(2)) != 1 || string(f.trust(2)[0]) == string(f.trust(1)[0]) {
		t.Fatal("generation 2: want cert-manager's new CA alone")
	}
}

// With the state Secret lost while members run generation 1, the next generation is 2:
// generation 1's Secrets, which members mount, are never rewritten; and a generation
// number whose Secrets hold something else is skipped.
func TestCertManagerTLSNeverRewritesAGeneration(t *testing.T) {
	f := newCMFixture(t)
	f.startOn1()
	ctx := context.Background()
	peer1, _, _ := certmanager.GenerationSecrets("db", 1)
	before := f.secret(peer1).Data[peerCertKey]
	if err := f.c.Delete(ctx, f.secret(certmanager.StateSecretName("db"))); err != nil {
		t.Fatal(err)
	}
	// A leftover generation 2 Secret with other contents.
	peer2, _, _ := certmanager.GenerationSecrets("db", 2)
	if err := f.r.putOwnedSecret(ctx, f.cluster, peer2, certManagerIssuing, map[string][]byte{"x": []byte("y")}); err != nil {
		t.Fatal(err)
	}
	f.forceRenewal()
	f.settle(1)
	f.resolveOn(3)
	if string(f.secret(peer1).Data[peerCertKey]) != string(before) {
		t.Fatal("generation 1's Secret, mounted by members, was rewritten")
	}
	if string(f.secret(peer2).Data["x"]) != "y" {
		t.Fatal("the leftover generation 2 Secret was rewritten")
	}
}

// A Secret with a Certificate's secretName that cert-manager did not write for it is not
// handed to cert-manager to overwrite: no Certificate, the Secret named.
func TestCertManagerTLSRefusesAForeignSecretForACertificate(t *testing.T) {
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-cm-client", Namespace: "default"}, Data: map[string][]byte{"mine": []byte("x")}}
	f := newCMFixture(t, foreign)
	_, err := f.resolve()
	var be *builtinTLSError
	if !errors.As(err, &be) || be.reason != etcdv1beta2.ReasonCertificateSecretInvalid || !strings.Contains(err.Error(), `secret "db-cm-client"`) {
		t.Fatalf("resolve with a foreign Secret: %v, want CertificateSecretInvalid naming it", err)
	}
	var cert cmv1.Certificate
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "db-cm-client"}, &cert); err == nil {
		t.Fatal("a Certificate was made that would overwrite the foreign Secret")
	}
	// One cert-manager wrote for that Certificate (a Certificate deleted and made
	// again) is fine.
	foreign = f.secret("db-cm-client")
	foreign.Annotations = map[string]string{cmv1.CertificateNameKey: "db-cm-client"}
	if err := f.c.Update(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := f.resolve(); !tlsPending(err) {
		t.Fatalf("resolve with cert-manager's own Secret: %v, want pending", err)
	}
}

// Waiting on cert-manager with a generation in effect does not make CertificatesValid
// False: the certificates in use are assessed (their expiry too), the wait is named.
func TestCertManagerTLSPendingStillAssessesTheGenerationInEffect(t *testing.T) {
	f := newCMFixture(t)
	f.startOn1()
	if err := f.c.Delete(context.Background(), f.secret("db-cm-server")); err != nil {
		t.Fatal(err)
	}
	c, err := f.resolve()
	if !tlsPending(err) || c.Spec.TLS.Static == nil {
		t.Fatalf("resolve with cert-manager's Secret gone: %v, static %+v; want pending on generation 1", err, c.Spec.TLS.Static)
	}
	f.r.reportCertificates(context.Background(), c, err)
	cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid)
	if cond == nil || cond.Status != corev1.ConditionTrue || !strings.Contains(cond.Message, `Secret "db-cm-server" not written yet`) {
		t.Fatalf("CertificatesValid %+v, want True naming the wait", cond)
	}
	// The certificates in use expire: said though cert-manager is still not usable.
	f.now = f.now.Add(48 * time.Hour)
	f.r.reportCertificates(context.Background(), c, err)
	if cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid); cond == nil || cond.Reason != etcdv1beta2.ReasonCertificatesExpired {
		t.Fatalf("CertificatesValid %+v, want CertificatesExpired", cond)
	}
}

// A ClusterIssuer is used only when the operator lends it (--allowed-cluster-issuers):
// otherwise no Certificate is made and CertificatesValid names the flag.
func TestCertManagerTLSClusterIssuerNeedsTheOperatorsPermission(t *testing.T) {
	f := newCMFixture(t)
	f.cluster.Spec.TLS.CertManager.IssuerRef.Kind = cmv1.ClusterIssuerKind
	if err := f.c.Update(context.Background(), f.cluster); err != nil {
		t.Fatal(err)
	}
	c, err := f.resolve()
	var pe *certManagerPending
	if !errors.As(err, &pe) || pe.reason != etcdv1beta2.ReasonClusterIssuerNotAllowed || !strings.Contains(err.Error(), "--allowed-cluster-issuers") {
		t.Fatalf("resolve with a ClusterIssuer not lent: %v", err)
	}
	var certs cmv1.CertificateList
	if err := f.c.List(context.Background(), &certs); err != nil || len(certs.Items) != 0 {
		t.Fatalf("Certificates made for a ClusterIssuer not lent: %d %v", len(certs.Items), err)
	}
	f.r.reportCertificates(context.Background(), c, err)
	if cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid); cond == nil || cond.Status != corev1.ConditionFalse ||
		cond.Reason != etcdv1beta2.ReasonClusterIssuerNotAllowed {
		t.Fatalf("CertificatesValid %+v", cond)
	}
	for _, allowed := range [][]string{{"other", "ca"}, {"*"}} {
		f.r.ClusterIssuers = allowed
		if _, err := f.resolve(); errors.As(err, &pe) && pe.reason == etcdv1beta2.ReasonClusterIssuerNotAllowed {
			t.Fatalf("allowed %v: %v", allowed, err)
		}
	}
	if err := f.c.List(context.Background(), &certs); err != nil || len(certs.Items) != 3 {
		t.Fatalf("allowed: %d Certificates, %v", len(certs.Items), err)
	}
}

// The refusal to move running members to cert-manager's CA (reachable by static → none →
// certManager, two updates admission allows) is reported but does not stop the
// reconcile: the cluster is still observed and planned (a dead member is still
// replaced, as the running members run), as for any TLS change the planner refuses.
func TestCertManagerTLSRefusalDoesNotFreezeTheReconcile(t *testing.T) {
	f := newCMFixture(t)
	f.issuedWithMembersOn([2]string{"db-static-peer", "db-static-server"})
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.cluster)}); err != nil {
		t.Fatal(err)
	}
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.cluster), &c); err != nil {
		t.Fatal(err)
	}
	want := map[etcdv1beta2.ClusterConditionType]string{
		etcdv1beta2.ClusterConditionCertificatesValid: "False/" + etcdv1beta2.ReasonTLSChangeRefused, // reported
		etcdv1beta2.ClusterConditionSpecApplied:       "False/" + etcdv1beta2.ReasonTLSChangeRefused, // the planner ran, restarting no member
		etcdv1beta2.ClusterConditionReconciled:        "True/" + etcdv1beta2.ReasonReconciled,        // not frozen
	}
	for typ, w := range want {
		got := "absent"
		for _, cond := range c.Status.Conditions {
			if cond.Type == typ {
				got = string(cond.Status) + "/" + cond.Reason + " (" + cond.Message + ")"
			}
		}
		if !strings.HasPrefix(got, w+" ") {
			t.Errorf("%s: %s, want %s", typ, got, w)
		}
	}
}
