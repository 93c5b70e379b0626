package webhookcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

const (
	testNS      = "etcd-operator-system" // the namespace of the generated Role
	testService = "etcd-operator-webhook-service"
	testUser    = "webhookcert-test"
)

// startAPIServer runs a real kube-apiserver with the operator's CRDs, set up the way a
// kustomize install has them before the operator starts: etcdclusters with a conversion
// webhook naming our Service and no caBundle, etcdbackups naming a stale Service, and
// etcdrestores without conversion. It returns an admin client and a client for a user
// holding exactly the rules of config/rbac/role.yaml, which the markers generate.
func startAPIServer(t *testing.T) (admin, operator client.Client) {
	t.Helper()
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.EnvtestAssets(t)}
	cfg := testenv.StartEnvtest(t, env)
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must := func(obj client.Object) {
		t.Helper()
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
	must(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}})

	for _, name := range CRDNames {
		crd := readCRD(t, name)
		switch name {
		case "etcdclusters.etcd.database.coreos.com":
			crd.Spec.Conversion = webhookConversion(&apiextensionsv1.ServiceReference{
				Namespace: testNS, Name: testService, Path: ptr.To("/convert"), Port: ptr.To[int32](443)})
		case "etcdbackups.etcd.database.coreos.com":
			crd.Spec.Conversion = webhookConversion(&apiextensionsv1.ServiceReference{Namespace: "kube-system", Name: "stale"})
		default:
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		}
		must(crd)
	}

	// The operator's RBAC, as generated.
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var roles int
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: testUser}}
		switch meta.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict(doc, &r); err != nil {
				t.Fatal(err)
			}
			r.Name = testUser
			must(&r)
			must(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: testUser}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: testUser}})
			roles++
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict(doc, &r); err != nil {
				t.Fatal(err)
			}
			if r.Namespace != testNS {
				t.Fatalf("generated Role in namespace %q, want %q", r.Namespace, testNS)
			}
			r.Name = testUser
			must(&r)
			must(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: testUser, Namespace: testNS}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: testUser}})
			roles++
		}
	}
	if roles != 2 {
		t.Fatalf("config/rbac/role.yaml: found %d of ClusterRole and Role; run make manifests", roles)
	}
	user, err := env.AddUser(envtest.User{Name: testUser}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if operator, err = client.New(user.Config(), client.Options{Scheme: Scheme()}); err != nil {
		t.Fatal(err)
	}
	return admin, operator
}

func readCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "etcd.database.coreos.com_"+name[:len(name)-len(".etcd.database.coreos.com")]+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func webhookConversion(svc *apiextensionsv1.ServiceReference) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: svc},
		},
	}
}

func getCRD(t *testing.T, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func caBundle(crd *apiextensionsv1.CustomResourceDefinition) []byte {
	if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		return c.Webhook.ClientConfig.CABundle
	}
	return nil
}

func getSecret(t *testing.T, c client.Client, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// serve runs controller-runtime's webhook server on a loopback port with the certificate
// directory, as the manager would, and returns its address once it accepts connections.
func serve(t *testing.T, certDir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	srv.Register("/convert", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	poll.Eventually(t, 30*time.Second, 50*time.Millisecond, "webhook server listening", func() error {
		select {
		case err := <-done:
			t.Fatalf("webhook server exited: %v", err)
		default:
		}
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err
	})
	return addr
}

// handshake connects as the API server would: trusting only roots, for serverName.
func handshake(addr, serverName string, roots []byte) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(roots) {
		return nil, errors.New("no CA certificates in the bundle")
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func TestProvisionerAgainstAPIServer(t *testing.T) {
	admin, operator := startAPIServer(t)
	ctx := context.Background()
	dir1 := filepath.Join(t.TempDir(), "serving-certs")
	newP := func(c client.Client, dir string, o Options) *Provisioner {
		o.Namespace, o.ServiceName, o.CertDir, o.Log = testNS, testService, dir, testr.New(t)
		p, err := New(c, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1 := newP(operator, dir1, Options{Interval: 100 * time.Millisecond})
	if err := p1.Sync(ctx); err != nil {
		t.Fatalf("first Sync with the generated RBAC: %v", err)
	}

	// The Secret holds a pair valid for the Service's names.
	sec := getSecret(t, admin, testService+"-cert")
	if sec.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want %q", sec.Type, corev1.SecretTypeTLS)
	}
	b := BundleFromData(sec.Data)
	if plan, why := Decide(b, testNames, time.Now()); plan != Keep {
		t.Fatalf("Secret's bundle: %v (%s)", plan, why)
	}

	// The CRDs: caBundle is the Secret's CA, the Service reference ours; the CRD without
	// conversion is untouched.
	for _, name := range CRDNames[:2] {
		crd := getCRD(t, admin, name)
		if !bytes.Equal(caBundle(crd), b.CACert) {
			t.Errorf("%s: caBundle is not the Secret's ca.crt", name)
		}
		svc := crd.Spec.Conversion.Webhook.ClientConfig.Service
		if svc.Namespace != testNS || svc.Name != testService || ptr.Deref(svc.Path, "") != "/convert" || ptr.Deref(svc.Port, 0) != 443 {
			t.Errorf("%s: service reference %s/%s path %v port %v", name, svc.Namespace, svc.Name, ptr.Deref(svc.Path, ""), ptr.Deref(svc.Port, 0))
		}
	}
	if crd := getCRD(t, admin, CRDNames[2]); crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter || crd.Spec.Conversion.Webhook != nil {
		t.Errorf("%s: conversion without a webhook was changed to %+v", CRDNames[2], crd.Spec.Conversion)
	}

	// A TLS client trusting only the injected caBundle accepts the served certificate for
	// every Service name, and nothing else.
	addr := serve(t, dir1)
	injected := caBundle(getCRD(t, admin, CRDNames[0]))
	for _, n := range testNames {
		if _, err := handshake(addr, n, injected); err != nil {
			t.Errorf("handshake as %s trusting the caBundle: %v", n, err)
		}
	}
	if _, err := handshake(addr, testService+".other.svc", injected); err == nil {
		t.Error("handshake for another namespace's Service name succeeded")
	}
	stranger := mustRenew(t, &Bundle{}, RenewAll, testNames, time.Now())
	if _, err := handshake(addr, testNames[2], stranger.CACert); err == nil {
		t.Error("handshake trusting an unrelated CA succeeded")
	}

	// Another replica (or a restart) reuses the Secret as it is.
	dir2 := filepath.Join(t.TempDir(), "serving-certs")
	if err := newP(operator, dir2, Options{}).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if again := getSecret(t, admin, testService+"-cert"); again.ResourceVersion != sec.ResourceVersion {
		t.Error("a second replica rewrote a valid Secret")
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		a, _ := os.ReadFile(filepath.Join(dir1, f))
		c, _ := os.ReadFile(filepath.Join(dir2, f))
		if !bytes.Equal(a, c) || len(a) == 0 {
			t.Errorf("replicas hold different %s", f)
		}
	}

	// As a Runnable it puts back a caBundle that was reset ...
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p1.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	})
	crd := getCRD(t, admin, CRDNames[0])
	orig := crd.DeepCopy()
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = nil
	if err := admin.Patch(ctx, crd, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, 50*time.Millisecond, "caBundle re-injected", func() error {
		if !bytes.Equal(caBundle(getCRD(t, admin, CRDNames[0])), b.CACert) {
			return errors.New("caBundle still reset")
		}
		return nil
	})

	// ... and renews a serving certificate close to expiry, keeping the CA; the running
	// server picks the new certificate up from the directory.
	expiring := mustRenew(t, b, RenewServing, testNames, time.Now().Add(-servingValidity+10*24*time.Hour))
	sec = getSecret(t, admin, testService+"-cert")
	sec.Data = expiring.Data()
	if err := admin.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	var renewed *Bundle
	poll.Eventually(t, 30*time.Second, 50*time.Millisecond, "serving certificate renewed in the Secret", func() error {
		renewed = BundleFromData(getSecret(t, admin, testService+"-cert").Data)
		if plan, why := Decide(renewed, testNames, time.Now()); plan != Keep {
			return errors.New(why)
		}
		return nil
	})
	if !bytes.Equal(renewed.CACert, b.CACert) || !bytes.Equal(renewed.CAKey, b.CAKey) {
		t.Error("renewing the serving certificate replaced the CA")
	}
	want := parseCerts(t, renewed.Cert)[0]
	// The certificate watcher reloads on file events, else every 10 seconds.
	poll.Eventually(t, 30*time.Second, 50*time.Millisecond, "server serving the renewed certificate", func() error {
		leaf, err := handshake(addr, testNames[2], caBundle(getCRD(t, admin, CRDNames[0])))
		if err != nil {
			return err
		}
		if !leaf.Equal(want) {
			return errors.New("still the old certificate")
		}
		return nil
	})
}

// TestReplicasRaceForTheSecret: replicas starting together agree on one pair.
func TestReplicasRaceForTheSecret(t *testing.T) {
	_, operator := startAPIServer(t)
	const n = 4
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i] = t.TempDir()
		p, err := New(operator, Options{Namespace: testNS, ServiceName: testService, SecretName: "race-cert", CertDir: dirs[i], Log: testr.New(t)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Sync(context.Background())
		}()
	}
	wg.Wait()
	sec := getSecret(t, operator, "race-cert")
	for i := range n {
		if errs[i] != nil {
			t.Errorf("replica %d: %v", i, errs[i])
		}
		got, _ := os.ReadFile(filepath.Join(dirs[i], "tls.crt"))
		if !bytes.Equal(got, sec.Data[KeyCert]) {
			t.Errorf("replica %d serves a certificate other than the Secret's", i)
		}
	}
}

// TestLeavesForeignConversionAlone: a conversion webhook given by URL is not ours to
// change, and a CRD that is not installed is no error.
func TestLeavesForeignConversionAlone(t *testing.T) {
	admin, _ := startAPIServer(t)
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}},
				{Name: "v2", Served: true, Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ConversionReviewVersions: []string{"v1"},
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/convert")},
				},
			},
		},
	}
	if err := admin.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	before := getCRD(t, admin, crd.Name)
	p, err := New(admin, Options{Namespace: testNS, ServiceName: testService, CertDir: t.TempDir(),
		CRDNames: []string{crd.Name, "missing.example.com"}, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	// (The resourceVersion moves on its own as the API server records the CRD Established.)
	if after := getCRD(t, admin, crd.Name); !equality.Semantic.DeepEqual(after.Spec, before.Spec) {
		t.Errorf("a URL conversion webhook was changed: %+v", after.Spec.Conversion.Webhook.ClientConfig)
	}
}
