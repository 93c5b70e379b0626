package webhook

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

func parseServerFlags(t *testing.T, args ...string) *ServerOptions {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o := AddServerFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestWebhookFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "from-env")
	o := parseServerFlags(t)
	want := ServerOptions{port: 9443, certDir: "/tmp/k8s-webhook-server/serving-certs", certs: "self-signed",
		serviceName: "etcd-operator-webhook-service", namespace: "from-env"}
	if *o != want {
		t.Errorf("defaults %+v, want %+v", *o, want)
	}
	o = parseServerFlags(t, "--webhook-namespace=ops", "--webhook-certs=provided", "--webhook-port=0")
	if o.namespace != "ops" || o.certs != "provided" || o.port != 0 {
		t.Errorf("flags not applied: %+v", *o)
	}
}

// TestSetupServerWithoutWebhooks: where the webhook cannot or must not run, the
// manager is left without it (register is not called, so controller-runtime never starts
// the server) and no error stops the operator; invalid flags are errors.
func TestSetupServerWithoutWebhooks(t *testing.T) {
	ctx := context.Background()
	withCerts := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(withCerts, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name         string
		opts         ServerOptions
		wantRegister bool
		wantErr      bool
	}{
		{"disabled", ServerOptions{port: 0, certs: "self-signed", namespace: "ns", certDir: t.TempDir()}, false, false},
		{"provided but missing", ServerOptions{port: 9443, certs: "provided", certDir: t.TempDir()}, false, false},
		{"provided", ServerOptions{port: 9443, certs: "provided", certDir: withCerts}, true, false},
		{"self-signed without namespace", ServerOptions{port: 9443, certs: "self-signed", certDir: t.TempDir()}, false, false},
		{"unknown certs mode", ServerOptions{port: 9443, certs: "cert-manager", certDir: withCerts}, false, true},
		{"bad port", ServerOptions{port: 70000, certs: "provided", certDir: withCerts}, false, true},
	}
	for _, c := range cases {
		registered := false
		// No manager: none of these cases may need one.
		err := SetupServer(ctx, nil, &c.opts, func(ctrl.Manager) error { registered = true; return nil })
		if (err != nil) != c.wantErr || registered != c.wantRegister {
			t.Errorf("%s: err=%v registered=%v; want error %v, registered %v", c.name, err, registered, c.wantErr, c.wantRegister)
		}
	}
	sentinel := errors.New("register failed")
	o := ServerOptions{port: 9443, certs: "provided", certDir: withCerts}
	if err := SetupServer(ctx, nil, &o, func(ctrl.Manager) error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("register's error was not returned: %v", err)
	}
}

// TestSetupServerSelfSigned: against a real API server, self-signed mode leaves the
// certificate in the directory and the Secret before registering the webhooks.
func TestSetupServerSelfSigned(t *testing.T) {
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.EnvtestAssets(t)}
	cfg := testenv.StartEnvtest(t, env)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}); err != nil {
		t.Fatal(err)
	}
	o := parseServerFlags(t, "--webhook-namespace=ops", "--webhook-cert-dir="+filepath.Join(t.TempDir(), "certs"))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, WebhookServer: NewServer(o),
	})
	if err != nil {
		t.Fatal(err)
	}
	var filesAtRegister bool
	err = SetupServer(ctx, mgr, o, func(ctrl.Manager) error {
		_, errCrt := os.Stat(filepath.Join(o.certDir, "tls.crt"))
		_, errKey := os.Stat(filepath.Join(o.certDir, "tls.key"))
		filesAtRegister = errCrt == nil && errKey == nil
		return nil
	})
	if err != nil {
		t.Fatalf("SetupServer: %v", err)
	}
	if !filesAtRegister {
		t.Error("the certificate files were not there when the webhooks were registered")
	}
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ops", Name: "etcd-operator-webhook-service-cert"}, &s); err != nil {
		t.Errorf("certificate Secret: %v", err)
	}
}
