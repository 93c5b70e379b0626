//go:build integration

package controllers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// TestSlowRestoreHoldsNoOtherNamespace: one tenant's EtcdRestore whose S3 endpoint never
// answers does not hold the restore controller: another namespace's restore reaches its
// endpoint while the first still waits on its own (with one worker it would wait its turn).
func TestSlowRestoreHoldsNoOtherNamespace(t *testing.T) {
	cfg := fixture.Envtest(t, filepath.Join("..", "config", "crd", "bases"))

	// A tarpit per namespace: it answers nothing until the test ends.
	var mu sync.Mutex
	waiting := map[string]bool{}
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	tarpit := func(ns string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			waiting[ns] = true
			mu.Unlock()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}

	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(etcdv1beta2.AddToScheme(s))
	utilruntime.Must(etcdv1.AddToScheme(s))
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0", Logger: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupWithManager(mgr, Options{ClusterDomain: "cluster.local", OperatorImage: "op:test",
		AllowS3Endpoints: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { releaseAll(); cancel(); <-done })

	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		for _, o := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: ns},
				Data: map[string][]byte{"credentials": []byte("[default]\naws_access_key_id = id\naws_secret_access_key = s\n"),
					"config": []byte("[default]\nregion = us-east-1\n")}},
		} {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	endpoint := map[string]string{"tenant-a": tarpit("tenant-a"), "tenant-b": tarpit("tenant-b")}
	// Registered after the tarpits' Close (cleanups run last first): their handlers
	// return before the servers wait for them.
	t.Cleanup(releaseAll)
	create := func(ns string) {
		er := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns},
			Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "restored"}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
				RestoreSource: etcdv1beta2.RestoreSource{S3: &etcdv1beta2.S3BackupSource{Path: "bkt/snap", AWSSecret: "aws", Endpoint: endpoint[ns], ForcePathStyle: true}}}}
		if err := c.Create(ctx, er); err != nil {
			t.Fatal(err)
		}
	}
	create("tenant-a")
	reached := func(ns string) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			if !waiting[ns] {
				return fmt.Errorf("endpoints reached: %v", waiting)
			}
			return nil
		}
	}
	poll.Eventually(t, 20*time.Second, 50*time.Millisecond, "tenant-a's restore reaches its endpoint", reached("tenant-a"))
	create("tenant-b")
	// Well within the 30 s request deadline that would free tenant-a's worker.
	poll.Eventually(t, 15*time.Second, 50*time.Millisecond, "tenant-b's restore reaches its endpoint while tenant-a's waits", reached("tenant-b"))
}
