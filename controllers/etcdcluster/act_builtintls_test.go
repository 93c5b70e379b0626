package etcdcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// builtinFixture is a cluster with spec.TLS.auto (30 minute certificates) over a fake
// client, and a clock the test moves.
type builtinFixture struct {
	t       *testing.T
	c       client.Client
	r       *Reconciler
	rec     *record.FakeRecorder
	cluster *etcdv1beta2.EtcdCluster
	now     time.Time
}

func newBuiltinFixture(t *testing.T, objs ...client.Object) *builtinFixture {
	s := fixture.Scheme()
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "uid-db"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16", TLS: &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{
			CertificateLifetime: &metav1.Duration{Duration: 30 * time.Minute}}}},
	}
	f := &builtinFixture{t: t, cluster: cluster, rec: record.NewFakeRecorder(50),
		now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f.c = fake.NewClientBuilder().WithScheme(s).WithObjects(append([]client.Object{cluster}, objs...)...).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).WithInterceptorFuncs(secretsNeverListed).Build()
	f.r = newTestClusterReconciler(t, f.c, f.rec, func() time.Time { return f.now })
	f.r.ClusterDomain = "cluster.local"
	return f
}

// secretsNeverListed refuses to list Secrets, as the operator's RBAC does (it may get,
// create and update Secrets, never list or watch them): built-in issuing must find its
// Secrets by name.
var secretsNeverListed = interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); ok {
		return apierrors.NewForbidden(corev1.Resource("secrets"), "", errors.New("the operator may not list secrets"))
	}
	return cl.List(ctx, list, opts...)
}}

// resolve runs built-in issuing on a fresh copy of the cluster, as a reconcile does,
// and returns the copy (its spec.TLS.static as resolved).
func (f *builtinFixture) resolve() (*etcdv1beta2.EtcdCluster, error) {
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.cluster), &c); err != nil {
		f.t.Fatal(err)
	}
	w := f.r.statusWriterFor(&c)
	_, err := f.r.resolveBuiltinTLS(context.Background(), &c, w)
	if err == nil && (w.base.Spec.TLS.Static == nil || *w.base.Spec.TLS.Static.Member != *c.Spec.TLS.Static.Member) {
		f.t.Errorf("the status writer's base does not hold the resolved Secrets: the status patch would carry them")
	}
	return &c, err
}

// secretOrNil is the Secret name of namespace default, nil if it cannot be read.
func secretOrNil(c client.Client, name string) *corev1.Secret {
	var s corev1.Secret
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &s); err != nil {
		return nil
	}
	return &s
}

func (f *builtinFixture) secret(name string) *corev1.Secret {
	return secretOrNil(f.c, name)
}

func (f *builtinFixture) state() certissue.State {
	s, err := certissue.DecodeState(f.secret("db-builtin-tls-ca").Data)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// memberOn puts member pod name on generation gen's Secrets.
func (f *builtinFixture) memberOn(name string, gen int) {
	peer, server, _ := builtinSecrets(f.cluster, gen)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: render.MemberLabels("db", name)},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: volumePeerTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: peer}}},
			{Name: volumeServerTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: server}}},
		}}}
	if err := controllerutil.SetControllerReference(f.cluster, p, f.c.Scheme()); err != nil {
		f.t.Fatal(err)
	}
	ctx := context.Background()
	var old corev1.Pod
	if f.c.Get(ctx, client.ObjectKeyFromObject(p), &old) == nil {
		if err := f.c.Delete(ctx, &old); err != nil {
			f.t.Fatal(err)
		}
	}
	if err := f.c.Create(ctx, p); err != nil {
		f.t.Fatal(err)
	}
}

// startOn1 issues the first generation and puts every member on it.
func (f *builtinFixture) startOn1() {
	f.t.Helper()
	if _, err := f.resolve(); err != nil {
		f.t.Fatal(err)
	}
	f.allOn(1)
}

// allOn puts the cluster's three member pods on generation gen's Secrets.
func (f *builtinFixture) allOn(gen int) {
	for _, n := range []string{"db-aaaa", "db-bbbb", "db-cccc"} {
		f.memberOn(n, gen)
	}
}

func TestBuiltinTLSIssuesAndRenews(t *testing.T) {
	f := newBuiltinFixture(t)
	ctx := context.Background()
	c, err := f.resolve()
	if err != nil {
		t.Fatal(err)
	}
	st := c.Spec.TLS.Static
	if st == nil || st.Member.PeerSecret != "db-builtin-tls-1-peer" || st.Member.ServerSecret != "db-builtin-tls-1-server" || st.OperatorSecret != "db-builtin-tls-1-client" {
		t.Fatalf("resolved static TLS %+v", st)
	}
	for _, name := range []string{"db-builtin-tls-ca", "db-builtin-tls-client", "db-builtin-tls-1-peer", "db-builtin-tls-1-server", "db-builtin-tls-1-client"} {
		s := f.secret(name)
		if s == nil {
			t.Fatalf("secret %s not created", name)
		}
		if !metav1IsControlledBy(s, f.cluster) || s.Labels[LabelBuiltinTLS] != "true" || s.Labels[render.LabelCluster] != "db" {
			t.Errorf("secret %s: owners %v labels %v", name, s.OwnerReferences, s.Labels)
		}
	}
	// The stored spec is untouched: spec.TLS.static exists in memory only.
	var stored etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(f.cluster), &stored); err != nil || stored.Spec.TLS.Static != nil {
		t.Fatalf("stored spec TLS %+v (%v)", stored.Spec.TLS, err)
	}

	// The certificates name every member host and the client Service, and CertificatesValid says so.
	f.allOn(1)
	f.r.reportCertificates(ctx, c, nil)
	if cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid); cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != etcdv1beta2.ReasonCertificatesValid {
		t.Errorf("CertificatesValid %+v", cond)
	}
	peer, _ := certissue.ParseCert(f.secret("db-builtin-tls-1-peer").Data[peerCertKey])
	if got := testutil.ToFloat64(certificateExpiry.WithLabelValues("default", "db", "peer")); got != float64(peer.NotAfter.Unix()) {
		t.Errorf("expiry metric %v, want %v", got, peer.NotAfter.Unix())
	}
	server, _ := certissue.ParseCert(f.secret("db-builtin-tls-1-server").Data[serverCertKey])
	for _, h := range []string{render.MemberHost(c, "db-aaaa", "cluster.local"), "db-client.default.svc"} {
		if err := server.VerifyHostname(h); err != nil {
			t.Errorf("server certificate: %v", err)
		}
	}

	// Again, nothing due: nothing new.
	if _, err := f.resolve(); err != nil || f.state().Generation != 1 {
		t.Fatalf("generation %d (%v)", f.state().Generation, err)
	}
	drain(f.rec)

	// Two thirds of the lifetime gone, every member on generation 1: generation 2.
	f.now = f.now.Add(20 * time.Minute)
	c, err = f.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if f.state().Generation != 2 || c.Spec.TLS.Static.Member.PeerSecret != "db-builtin-tls-2-peer" || f.secret("db-builtin-tls-2-client") == nil {
		t.Fatalf("after 20m: generation %d, static %+v", f.state().Generation, c.Spec.TLS.Static)
	}
	if ev := strings.Join(drain(f.rec), "\n"); !strings.Contains(ev, etcdv1beta2.EventReasonCertificatesIssued) || !strings.Contains(ev, "peer certificate expires") {
		t.Errorf("events %q", ev)
	}
	if cs := f.secret(BuiltinClientSecret("db")); cs == nil || !sameData(cs.Data, f.secret("db-builtin-tls-2-client").Data) || !metav1IsControlledBy(cs, f.cluster) {
		t.Error("the clients' Secret does not hold generation 2's client certificate")
	}
	// Generation 1 stays as it was: members roll off it.
	if f.secret("db-builtin-tls-1-peer") == nil {
		t.Error("generation 1 removed while in use")
	}

	// Due again, but a member still runs generation 1, or has no pod: nothing until it
	// moved.
	f.now = f.now.Add(25 * time.Minute)
	f.memberOn("db-aaaa", 2)
	f.memberOn("db-bbbb", 2)
	if _, err := f.resolve(); err != nil || f.state().Generation != 2 {
		t.Fatalf("rolling out: generation %d (%v)", f.state().Generation, err)
	}
	if err := f.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-cccc", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.resolve(); err != nil || f.state().Generation != 2 {
		t.Fatalf("a member without a pod: generation %d (%v)", f.state().Generation, err)
	}
	f.memberOn("db-cccc", 2)
	if _, err := f.resolve(); err != nil || f.state().Generation != 3 {
		t.Fatalf("rolled out: generation %d (%v)", f.state().Generation, err)
	}

	// A CA rotation asked for: the new CA is trusted beside the old in generation 4,
	// signs in generation 5, is alone in generation 6, each once the one before is out.
	oldCA := f.state().CA.CertPEM
	f.allOn(3)
	if err := f.c.Patch(ctx, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+etcdv1beta2.AnnotationRotateCA+`":"2026-03-01"}}}`))); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		gen   int
		phase certissue.Phase
		cas   int
	}{{4, certissue.PhaseTrusting, 2}, {5, certissue.PhaseSwitched, 2}, {6, certissue.PhaseSteady, 1}} {
		if _, err := f.resolve(); err != nil {
			t.Fatal(err)
		}
		s := f.state()
		trust, _ := certissue.ParseBundle(f.secret(builtinName(step.gen, "peer")).Data[peerCAKey])
		if s.Generation != step.gen || s.Phase != step.phase || len(trust) != step.cas {
			t.Fatalf("CA rotation: generation %d phase %q with %d CAs, want %d %q %d", s.Generation, s.Phase, len(trust), step.gen, step.phase, step.cas)
		}
		if _, err := f.resolve(); err != nil || f.state().Generation != step.gen {
			t.Fatalf("generation %d moved on before it was rolled out (%v)", step.gen, err)
		}
		f.allOn(step.gen)
		if step.phase == certissue.PhaseSteady {
			continue
		}
		// Rolled out, but the clients' Secret changed less than caStepDwell (default
		// 5m) ago: the next step waits for clients to reread it.
		f.now = f.now.Add(certissue.DefaultCAStepDwell - time.Second)
		if _, err := f.resolve(); err != nil || f.state().Generation != step.gen {
			t.Fatalf("generation %d moved on within the CA step dwell (%v)", step.gen, err)
		}
		f.now = f.now.Add(time.Second)
	}
	if certissue.SameBundle(f.state().Trust, oldCA) {
		t.Error("the old CA is still the CA after the rotation")
	}
	if _, err := f.resolve(); err != nil || f.state().Generation != 6 {
		t.Errorf("a handled rotation request rotated again: generation %d (%v)", f.state().Generation, err)
	}
}

func builtinName(gen int, role string) string {
	p, s, c := builtinSecrets(&etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"}}, gen)
	return map[string]string{"peer": p, "server": s, "client": c}[role]
}

// A Secret of the name built-in issuing writes that the cluster does not own is neither
// read nor overwritten: CertificatesValid False naming it, and the reconcile stops.
func TestBuiltinTLSForeignSecret(t *testing.T) {
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-builtin-tls-ca", Namespace: "default"},
		Data: map[string][]byte{"ca.crt": []byte("mine")}}
	f := newBuiltinFixture(t, foreign)
	c, err := f.resolve()
	var be *builtinTLSError
	if !errors.As(err, &be) || be.reason != etcdv1beta2.ReasonCertificateSecretInvalid || !strings.Contains(err.Error(), `"db-builtin-tls-ca"`) {
		t.Fatalf("err %v", err)
	}
	f.r.reportCertificates(context.Background(), c, err)
	cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonCertificateSecretInvalid {
		t.Errorf("CertificatesValid %+v", cond)
	}
	if s := f.secret("db-builtin-tls-ca"); string(s.Data["ca.crt"]) != "mine" || len(s.OwnerReferences) != 0 {
		t.Error("the foreign Secret was changed")
	}
	if f.secret("db-builtin-tls-1-peer") != nil {
		t.Error("certificates issued without the cluster's CA Secret")
	}
}

// staleSecrets serves Secrets as they were when it was made, as a cache one write behind.
type staleSecrets struct {
	client.Client
	frozen map[string]*corev1.Secret
}

func (s staleSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	sec, ok := obj.(*corev1.Secret)
	if !ok {
		return s.Client.Get(ctx, key, obj, opts...)
	}
	f := s.frozen[key.Name]
	if f == nil {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	f.DeepCopyInto(sec)
	return nil
}

// The CA Secret is read from the API server: a client whose Secrets lag a write behind
// must not make the next reconcile see the generation before (and point members back
// at it) or issue a generation twice.
func TestBuiltinTLSReadsItsStateFromTheAPIServer(t *testing.T) {
	f := newBuiltinFixture(t)
	f.startOn1()
	frozen := map[string]*corev1.Secret{}
	for _, n := range []string{"db-builtin-tls-ca", "db-builtin-tls-client", builtinName(1, "peer"), builtinName(1, "server"), builtinName(1, "client")} {
		frozen[n] = f.secret(n)
	}
	f.r.APIReader = f.c
	f.r.Client = staleSecrets{Client: f.c, frozen: frozen}
	f.now = f.now.Add(21 * time.Minute)
	for i := 0; i < 2; i++ {
		c, err := f.resolve()
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Spec.TLS.Static.Member.PeerSecret; got != builtinName(2, "peer") || f.state().Generation != 2 {
			t.Fatalf("reconcile %d: spec points at %s, generation %d; want generation 2", i, got, f.state().Generation)
		}
	}
}

// A status write in the middle of a reconcile (the checkpoint before a bootstrap) reads
// the stored object back into the cluster: the resolved Secrets must survive it, or the
// pods created next would run without TLS.
func TestBuiltinTLSSurvivesAStatusCheckpoint(t *testing.T) {
	f := newBuiltinFixture(t)
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.cluster), &c); err != nil {
		t.Fatal(err)
	}
	w := f.r.statusWriterFor(&c)
	if _, err := f.r.resolveBuiltinTLS(context.Background(), &c, w); err != nil {
		t.Fatal(err)
	}
	c.Status.BootstrapMembers = []string{"db-aaaa"}
	if err := w.checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.Spec.TLS.Static == nil || c.Spec.TLS.Static.Member.PeerSecret != builtinName(1, "peer") {
		t.Fatalf("after a checkpoint spec.TLS.static is %+v", c.Spec.TLS.Static)
	}
	var stored etcdv1beta2.EtcdCluster
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.cluster), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.TLS.Static != nil || len(stored.Status.BootstrapMembers) != 1 {
		t.Errorf("stored: spec TLS %+v, bootstrap members %v", stored.Spec.TLS, stored.Status.BootstrapMembers)
	}
}

// CertificatesValid and the expiry metric judge what the member pods mount, not only
// what the spec names: a roll stuck with pods on an expired generation is False.
func TestCertificatesValidSeesMountedGenerations(t *testing.T) {
	f := newBuiltinFixture(t)
	ctx := context.Background()
	f.startOn1()
	f.now = f.now.Add(20 * time.Minute) // generation 1 due
	c, err := f.resolve()
	if err != nil || f.state().Generation != 2 {
		t.Fatalf("generation %d (%v)", f.state().Generation, err)
	}
	f.memberOn("db-aaaa", 2) // the roll stops there
	old, _ := certissue.ParseCert(f.secret("db-builtin-tls-1-peer").Data[peerCertKey])

	f.r.reportCertificates(ctx, c, nil)
	if got := testutil.ToFloat64(certificateExpiry.WithLabelValues("default", "db", "peer")); got != float64(old.NotAfter.Unix()) {
		t.Errorf("peer expiry metric %v, want generation 1's %v", got, old.NotAfter.Unix())
	}

	f.now = old.NotAfter.Add(time.Minute) // generation 2 still has ~19m
	f.r.reportCertificates(ctx, c, nil)
	cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonCertificatesExpired ||
		!strings.Contains(cond.Message, `"db-builtin-tls-1-peer"`) || !strings.Contains(cond.Message, `"db-builtin-tls-1-server"`) {
		t.Fatalf("CertificatesValid %+v", cond)
	}
	if strings.Contains(cond.Message, "db-builtin-tls-2-") {
		t.Errorf("generation 2 reported: %s", cond.Message)
	}

	// The roll done: only generation 2 is judged, and it is valid.
	f.allOn(2)
	f.r.reportCertificates(ctx, c, nil)
	if cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid); cond == nil || cond.Status != corev1.ConditionTrue {
		t.Errorf("after the roll: CertificatesValid %+v", cond)
	}
	// A mounted Secret gone from the API server is left out, not an error.
	f.memberOn("db-bbbb", 1)
	if err := f.c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-builtin-tls-1-peer", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(-2 * time.Minute) // generation 1's server certificate valid again
	f.r.reportCertificates(ctx, c, nil)
	if cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid); cond == nil || cond.Status != corev1.ConditionTrue || strings.Contains(cond.Message, "not found") {
		t.Errorf("a mounted Secret deleted: CertificatesValid %+v", cond)
	}
}

// The warning's window, as the README states it: 30 days; with built-in issuing
// min(30 days, renewBefore/2).
func TestCertificatesWarnWithin(t *testing.T) {
	day := 24 * time.Hour
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	for _, tc := range []struct {
		tls  *etcdv1beta2.TLSPolicy
		want time.Duration
	}{
		{&etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: "p", ServerSecret: "s"}}}, 30 * day},
		{&etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}, 15 * day},
		{&etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{CertificateLifetime: d(365 * day)}}, 30 * day},
		{&etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{CertificateLifetime: d(30 * time.Minute), RenewBefore: d(12 * time.Minute)}}, 6 * time.Minute},
	} {
		c := &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.EtcdClusterSpec{TLS: tc.tls}}
		if got := warnWithin(c); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.tls, got, tc.want)
		}
	}
}

// The reconcile is requeued for the moment built-in issuing's next step falls due: the
// renewal of a generation's leaves, and each CA rotation step's dwell end, not the
// periodic resync after it.
func TestBuiltinTLSWakesWhenTheNextStepIsDue(t *testing.T) {
	f := newBuiltinFixture(t)
	f.cluster.Spec.TLS.Auto.CAStepDwell = &metav1.Duration{Duration: 20 * time.Second}
	if err := f.c.Update(context.Background(), f.cluster); err != nil {
		t.Fatal(err)
	}
	resolve := func() time.Time {
		t.Helper()
		var c etcdv1beta2.EtcdCluster
		if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.cluster), &c); err != nil {
			t.Fatal(err)
		}
		due, err := f.r.resolveBuiltinTLS(context.Background(), &c, f.r.statusWriterFor(&c))
		if err != nil {
			t.Fatal(err)
		}
		return due
	}
	due := resolve()
	peer, _ := certissue.ParseCert(f.secret("db-builtin-tls-1-peer").Data[peerCertKey])
	if want := peer.NotAfter.Add(-10 * time.Minute); !due.Equal(want) { // renewBefore: a third of 30m
		t.Errorf("steady: due %s, want the leaves' renewal at %s", due, want)
	}
	f.allOn(1)
	if err := f.c.Patch(context.Background(), &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+etcdv1beta2.AnnotationRotateCA+`":"r1"}}}`))); err != nil {
		t.Fatal(err)
	}
	if due := resolve(); f.state().Phase != certissue.PhaseTrusting || !due.Equal(f.now.Add(20*time.Second)) {
		t.Errorf("CA rotation begun: phase %q, due %s, want the dwell's end %s", f.state().Phase, due, f.now.Add(20*time.Second))
	}
	for _, tc := range []struct {
		name   string
		result time.Duration
		due    time.Time
		want   time.Duration
	}{
		{"due before the resync", steadyResync, f.now.Add(20 * time.Second), 20 * time.Second},
		{"due after the resync", steadyResync, f.now.Add(time.Hour), steadyResync},
		{"no requeue asked", 0, f.now.Add(time.Hour), time.Hour},
		{"nothing due", steadyResync, time.Time{}, steadyResync},
		{"due already (a roll-out's pods wake it)", steadyResync, f.now.Add(-time.Second), steadyResync},
	} {
		if got := wakeBy(ctrl.Result{RequeueAfter: tc.result}, tc.due, f.now); got.RequeueAfter != tc.want {
			t.Errorf("%s: requeue after %s, want %s", tc.name, got.RequeueAfter, tc.want)
		}
	}
}

// A paused cluster with built-in issuing is observed as its members serve: over https,
// with the client certificate of the generation in effect, and nothing is issued.
func TestBuiltinTLSPausedObservedOverTLS(t *testing.T) {
	f := newBuiltinFixture(t)
	f.startOn1()
	ctx := context.Background()
	var pods corev1.PodList
	if err := f.c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		p.Status.PodIP = "127.0.0.1"
		if err := f.c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(f.cluster), &c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Paused = true
	if err := f.c.Update(ctx, &c); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(25 * time.Minute) // a renewal is due: a paused cluster gets none
	if _, err := f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.cluster)}); err != nil {
		t.Fatal(err)
	}
	e := f.r.admins.m[clusterKey(f.cluster)]
	if e == nil || e.tls == nil {
		t.Fatalf("paused cluster observed without TLS (client %v)", e)
	}
	for _, ep := range e.admin.Endpoints() {
		if !strings.HasPrefix(ep, "https://") {
			t.Errorf("paused cluster dialled at %s, want https", ep)
		}
	}
	if g := f.state().Generation; g != 1 || f.secret("db-builtin-tls-2-peer") != nil {
		t.Errorf("a paused cluster was issued generation %d", g)
	}
}

// A CA Secret deleted while the members run certificates it signed is not made anew (the
// members would not trust a new CA): CertificatesValid says so with CASecretMissing, and
// the cluster goes on with the generation its members mount.
func TestBuiltinTLSLostCASecret(t *testing.T) {
	f := newBuiltinFixture(t)
	ctx := context.Background()
	f.startOn1()
	f.now = f.now.Add(25 * time.Minute) // a renewal is due
	if _, err := f.resolve(); err != nil || f.state().Generation != 2 {
		t.Fatalf("generation %d (%v)", f.state().Generation, err)
	}
	f.allOn(2)
	if err := f.c.Delete(ctx, f.secret("db-builtin-tls-ca")); err != nil {
		t.Fatal(err)
	}
	c, err := f.resolve()
	var lost *caLostError
	if !errors.As(err, &lost) || lost.generation != 2 {
		t.Fatalf("resolve with the CA Secret gone: %v, want the lost CA with generation 2", err)
	}
	if f.secret("db-builtin-tls-ca") != nil || f.secret("db-builtin-tls-3-peer") != nil {
		t.Error("a new CA or generation was made while members run the old CA's certificates")
	}
	if st := c.Spec.TLS.Static; st == nil || st.Member.PeerSecret != "db-builtin-tls-2-peer" || st.OperatorSecret != "db-builtin-tls-2-client" {
		t.Errorf("static TLS %+v, want generation 2's Secrets", st)
	}
	f.r.reportCertificates(ctx, c, err)
	if cond := findCondition(c, etcdv1beta2.ClusterConditionCertificatesValid); cond == nil || cond.Status != corev1.ConditionFalse ||
		cond.Reason != etcdv1beta2.ReasonCASecretMissing || !strings.Contains(cond.Message, "db-builtin-tls-ca") {
		t.Errorf("CertificatesValid %+v", cond)
	}

	// No member pod left (all lost, or a hibernated cluster resuming): still no new
	// CA, and the members are created with the newest generation whose Secrets are
	// still there, not blocked for want of a pod that mounts one.
	for _, n := range []string{"db-aaaa", "db-bbbb", "db-cccc"} {
		if err := f.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default"}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err = f.resolve()
	if !errors.As(err, &lost) || lost.generation != 2 || f.secret("db-builtin-tls-ca") != nil {
		t.Fatalf("no pods, generation 2's Secrets left: %v (CA Secret made: %v)", err, f.secret("db-builtin-tls-ca") != nil)
	}
	if st := c.Spec.TLS.Static; st == nil || st.Member.PeerSecret != "db-builtin-tls-2-peer" || st.Member.ServerSecret != "db-builtin-tls-2-server" {
		t.Errorf("no pods: static TLS %+v, want generation 2's Secrets", st)
	}
	// A generation missing its server Secret is not taken; nothing left: none at all.
	if err := f.c.Delete(ctx, f.secret("db-builtin-tls-2-server")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.resolve(); !errors.As(err, &lost) || lost.generation == 2 {
		t.Errorf("generation 2 without its server Secret: %v", err)
	}
}
