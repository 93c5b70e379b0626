package olm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/webhook"
)

// conversionServer is a conversion webhook server running in the test process.
type conversionServer struct {
	hostPort string // 127.0.0.1:<port>
	caPEM    []byte // the CA its serving certificate chains to
}

// startConversionWebhook serves the operator's conversion webhook
// (internal/webhook.SetupConversion) on a controller-runtime manager's webhook server in
// this process, on loopback, with a certificate from a CA envtest generates, and returns
// once the server accepts TLS connections. Everything stops when the test ends.
func startConversionWebhook(t *testing.T, cfg *rest.Config) *conversionServer {
	t.Helper()
	certs := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := certs.PrepWithoutInstalling(); err != nil {
		t.Fatalf("webhook certificates: %v", err)
	}
	t.Cleanup(func() { _ = certs.Cleanup() })

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{etcdv1beta2.AddToScheme, etcdv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	server := crwebhook.NewServer(crwebhook.Options{
		Host: certs.LocalServingHost, Port: certs.LocalServingPort, CertDir: certs.LocalServingCertDir,
	})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		WebhookServer:          server,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.SetupConversion(mgr); err != nil {
		t.Fatalf("SetupConversion: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	})

	started := server.StartedChecker()
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	var last error
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err // for the cleanup
			return false, errors.Join(errors.New("manager stopped"), err)
		default:
		}
		last = started(req)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("conversion webhook server did not start: %v (last: %v)", err, last)
	}
	return &conversionServer{
		hostPort: net.JoinHostPort(certs.LocalServingHost, strconv.Itoa(certs.LocalServingPort)),
		caPEM:    certs.LocalServingCAData,
	}
}
