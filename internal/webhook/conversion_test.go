package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/internal/webhook"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1beta2.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// startConversion runs a real kube-apiserver with the generated CRDs, rewritten by
// envtest to call our webhook server on loopback with a generated CA (it does so for the
// kinds the scheme says are convertible), and a manager serving SetupConversion's
// webhook. It returns once a conversion has gone through the API server.
func startConversion(t *testing.T) client.Client {
	t.Helper()
	scheme := newScheme(t)
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: testenv.EnvtestAssets(t),
		Scheme:                scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"},
	}
	cfg := testenv.StartEnvtest(t, env)

	wo := env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.SetupConversion(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// Registered after env.Stop's cleanup, so it runs first: the manager stops before
	// the API server it talks to.
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The API server calls the webhook only once there is something to convert, so wait
	// on the server's own check that it is listening.
	checker := mgr.GetWebhookServer().StartedChecker()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return checker(nil) == nil, nil }); err != nil {
		t.Fatalf("webhook server did not start: %v", err)
	}
	return c
}

func TestConversionThroughAPIServer(t *testing.T) {
	c := startConversion(t)
	ctx := context.Background()
	const ns = "default"

	t.Run("v1beta2 cluster read and updated as v1", func(t *testing.T) {
		orig := &v1beta2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "coreos", Namespace: ns},
			Spec: v1beta2.EtcdClusterSpec{
				Size: 3, Version: "3.6.16",
				Pod: &v1beta2.PodPolicy{
					BusyboxImage:       "busybox:1.28.0-glibc",
					DNSTimeoutInSecond: 60,
					ClusterDomain:      "cluster.local",
					Labels:             map[string]string{"tier": "db"},
				},
				TLS: &v1beta2.TLSPolicy{Static: &v1beta2.StaticTLS{
					Member:         &v1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"},
					OperatorSecret: "client",
				}},
			},
		}
		orig.Spec.Pod.EtcdEnv = append(orig.Spec.Pod.EtcdEnv, envVar("ETCD_QUOTA_BACKEND_BYTES", "4294967296"))
		if err := c.Create(ctx, orig); err != nil {
			t.Fatal(err)
		}
		orig.Status = v1beta2.EtcdClusterStatus{
			Phase: v1beta2.ClusterPhaseRunning, Size: 3, CurrentVersion: "3.6.16",
			Conditions: []v1beta2.ClusterCondition{{
				Type: v1beta2.ClusterConditionAvailable, Status: "True", Reason: "AllMembersReady", Message: "ready",
				LastUpdateTime: "2024-05-01T10:00:05Z", LastTransitionTime: "2024-05-01T10:00:00Z",
			}},
		}
		if err := c.Status().Update(ctx, orig); err != nil {
			t.Fatal(err)
		}

		var v1 etcdv1.EtcdCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(orig), &v1); err != nil {
			t.Fatalf("read as v1: %v", err)
		}
		p := v1.Spec.Pod
		if p == nil || p.DNSTimeout == nil || p.DNSTimeout.Duration != time.Minute || p.ClusterDomain != "cluster.local" ||
			len(p.Env) != 1 || p.Env[0].Name != "ETCD_QUOTA_BACKEND_BYTES" || p.Labels["tier"] != "db" {
			t.Errorf("v1 pod policy: %+v", p)
		}
		if tls := v1.Spec.TLS; tls == nil || tls.Static == nil || tls.Static.OperatorSecret != "client" || tls.Static.Member.ServerSecret != "server" {
			t.Errorf("v1 tls: %+v", tls)
		}
		if len(v1.Status.Conditions) != 1 || v1.Status.Conditions[0].Type != "Available" ||
			!v1.Status.Conditions[0].LastTransitionTime.Time.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("v1 conditions: %+v", v1.Status.Conditions)
		}
		if data := v1.Annotations[etcdv1.ConversionDataAnnotation]; !strings.Contains(data, "busybox:1.28.0-glibc") || !strings.Contains(data, "2024-05-01T10:00:05Z") {
			t.Errorf("v1 object does not keep busyboxImage and lastUpdateTime: %q", data)
		}

		// Update spec and status through v1; what only v1beta2 has must survive.
		v1.Spec.Size = 5
		if err := c.Update(ctx, &v1); err != nil {
			t.Fatalf("update as v1: %v", err)
		}
		v1.Status.Conditions[0].Message = "five soon"
		if err := c.Status().Update(ctx, &v1); err != nil {
			t.Fatalf("status update as v1: %v", err)
		}
		var got v1beta2.EtcdCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(orig), &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Size != 5 || got.Spec.Pod.BusyboxImage != "busybox:1.28.0-glibc" || got.Spec.Pod.DNSTimeoutInSecond != 60 ||
			got.Spec.Pod.ClusterDomain != "cluster.local" || len(got.Spec.Pod.EtcdEnv) != 1 || got.Spec.TLS.Static.OperatorSecret != "client" {
			t.Errorf("v1beta2 spec after a v1 update: %+v pod=%+v", got.Spec, got.Spec.Pod)
		}
		if cs := got.Status.Conditions; len(cs) != 1 || cs[0].Message != "five soon" ||
			cs[0].LastUpdateTime != "2024-05-01T10:00:05Z" || cs[0].LastTransitionTime != "2024-05-01T10:00:00Z" {
			t.Errorf("v1beta2 conditions after a v1 status update: %+v", cs)
		}
		if _, ok := got.Annotations[etcdv1.ConversionDataAnnotation]; ok {
			t.Errorf("nothing v1-only was set, yet the stored object has conversion data: %v", got.Annotations)
		}
	})

	t.Run("v1 backup read as v1beta2", func(t *testing.T) {
		b := &etcdv1.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
			Spec: etcdv1.EtcdBackupSpec{
				EtcdEndpoints: []string{"http://example-client:2379"},
				StorageType:   etcdv1.BackupStorageTypeS3,
				BackupPolicy: &etcdv1.BackupPolicy{
					Timeout:        &metav1.Duration{Duration: 1500 * time.Millisecond},
					BackupInterval: &metav1.Duration{Duration: time.Hour},
					MaxBackups:     7,
				},
				StorageSource: etcdv1.StorageSource{S3: &etcdv1.S3Source{Path: "bucket/key", CredentialsSecret: "aws"}},
			},
		}
		if err := c.Create(ctx, b); err != nil {
			t.Fatalf("create as v1: %v", err)
		}
		var hub v1beta2.EtcdBackup
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), &hub); err != nil {
			t.Fatal(err)
		}
		bp := hub.Spec.BackupPolicy
		if bp == nil || bp.TimeoutInSecond != 1 || bp.BackupIntervalInSecond != 3600 || bp.MaxBackups != 7 ||
			hub.Spec.S3 == nil || hub.Spec.S3.AWSSecret != "aws" || hub.Spec.StorageType != v1beta2.BackupStorageTypeS3 {
			t.Errorf("v1beta2 backup: %+v policy=%+v s3=%+v", hub.Spec, bp, hub.Spec.S3)
		}

		// The controllers update through v1beta2; a v1 reader still sees 1.5s.
		hub.Spec.ClientTLSSecret = "client"
		if err := c.Update(ctx, &hub); err != nil {
			t.Fatal(err)
		}
		var v1 etcdv1.EtcdBackup
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), &v1); err != nil {
			t.Fatal(err)
		}
		if d := v1.Spec.BackupPolicy.Timeout; d == nil || d.Duration != 1500*time.Millisecond || v1.Spec.ClientTLSSecret != "client" {
			t.Errorf("v1 backup after a v1beta2 update: %+v", v1.Spec)
		}
		if _, ok := v1.Annotations[etcdv1.ConversionDataAnnotation]; ok {
			t.Errorf("conversion data leaked to the v1 object: %v", v1.Annotations)
		}
	})

	t.Run("v1 restore read as v1beta2, listed as v1", func(t *testing.T) {
		r := &etcdv1.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "restore", Namespace: ns},
			Spec: etcdv1.EtcdRestoreSpec{
				EtcdCluster:   etcdv1.EtcdClusterRef{Name: "restored"},
				StorageType:   etcdv1.BackupStorageTypePVC,
				StorageSource: etcdv1.StorageSource{PVC: &etcdv1.PVCSource{ClaimName: "backups", Path: "snap.db"}},
			},
		}
		if err := c.Create(ctx, r); err != nil {
			t.Fatalf("create as v1: %v", err)
		}
		var hub v1beta2.EtcdRestore
		if err := c.Get(ctx, client.ObjectKeyFromObject(r), &hub); err != nil {
			t.Fatal(err)
		}
		if hub.Spec.BackupStorageType != v1beta2.BackupStorageTypePVC || hub.Spec.PVC == nil || hub.Spec.PVC.ClaimName != "backups" || hub.Spec.EtcdCluster.Name != "restored" {
			t.Errorf("v1beta2 restore: %+v", hub.Spec)
		}
		var list etcdv1.EtcdClusterList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatalf("list clusters as v1: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].Spec.Size != 5 {
			t.Errorf("v1 cluster list: %+v", list.Items)
		}
	})

	rejected := []struct {
		name, field string
		obj         client.Object
	}{
		{"restore backupRef with an object key", "spec.backupRef", &etcdv1.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "ref-and-key", Namespace: ns},
			Spec: etcdv1.EtcdRestoreSpec{EtcdCluster: etcdv1.EtcdClusterRef{Name: "c"}, StorageType: etcdv1.BackupStorageTypeS3,
				BackupRef:     &etcdv1.BackupRef{Name: "nightly"},
				StorageSource: etcdv1.StorageSource{S3: &etcdv1.S3Source{Path: "bucket/key", CredentialsSecret: "aws"}}},
		}},
		{"restore select without backupRef", "spec.select", &etcdv1.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "select-alone", Namespace: ns},
			Spec: etcdv1.EtcdRestoreSpec{EtcdCluster: etcdv1.EtcdClusterRef{Name: "c"}, StorageType: etcdv1.BackupStorageTypeS3,
				Select:        &etcdv1.BackupSelector{MinRevision: 5},
				StorageSource: etcdv1.StorageSource{S3: &etcdv1.S3Source{Path: "bucket/key", CredentialsSecret: "aws"}}},
		}},
		{"restore empty select", "spec.select", &etcdv1.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "select-empty", Namespace: ns},
			Spec: etcdv1.EtcdRestoreSpec{EtcdCluster: etcdv1.EtcdClusterRef{Name: "c"}, StorageType: etcdv1.BackupStorageTypeS3,
				BackupRef: &etcdv1.BackupRef{Name: "nightly"}, Select: &etcdv1.BackupSelector{}},
		}},
		{"restore S3 with neither s3 nor backupRef", "spec.s3", &etcdv1.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "nothing", Namespace: ns},
			Spec:       etcdv1.EtcdRestoreSpec{EtcdCluster: etcdv1.EtcdClusterRef{Name: "c"}, StorageType: etcdv1.BackupStorageTypeS3},
		}},
		{"restore negative minRevision", "spec.select.minRevision", &etcdv1.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "select-negative", Namespace: ns},
			Spec: etcdv1.EtcdRestoreSpec{EtcdCluster: etcdv1.EtcdClusterRef{Name: "c"}, StorageType: etcdv1.BackupStorageTypeS3,
				BackupRef: &etcdv1.BackupRef{Name: "nightly"}, Select: &etcdv1.BackupSelector{MinRevision: -1}},
		}},
		{"negative dnsTimeout", "spec.pod.dnsTimeout", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "neg", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 3, Pod: &etcdv1.PodPolicy{DNSTimeout: &metav1.Duration{Duration: -time.Second}}},
		}},
		{"server TLS without operator secret", "spec.tls.static.operatorSecret", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "tls-half", Namespace: ns},
			Spec: etcdv1.EtcdClusterSpec{Size: 3, TLS: &etcdv1.TLSPolicy{Static: &etcdv1.StaticTLS{
				Member: &etcdv1.MemberSecret{ServerSecret: "s"}}}},
		}},
		{"reserved label", "spec.pod.labels", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "label", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 3, Pod: &etcdv1.PodPolicy{Labels: map[string]string{"etcd_node": "x"}}},
		}},
		{"malformed dnsTimeout", "spec.pod.dnsTimeout", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "etcd.database.coreos.com/v1", "kind": "EtcdCluster",
			"metadata": map[string]any{"name": "days", "namespace": ns},
			"spec":     map[string]any{"size": int64(3), "pod": map[string]any{"dnsTimeout": "1d"}},
		}}},
		{"verification time zone without a schedule", "spec.verification.timeZone", &etcdv1.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "verify-tz", Namespace: ns},
			Spec: etcdv1.EtcdBackupSpec{StorageType: etcdv1.BackupStorageTypeS3, ClusterRef: &etcdv1.EtcdClusterRef{Name: "c"},
				StorageSource: etcdv1.StorageSource{S3: &etcdv1.S3Source{Path: "b/k", CredentialsSecret: "aws"}},
				Verification:  &etcdv1.BackupVerification{AfterEachBackup: true, TimeZone: "Europe/Berlin"}},
		}},
		{"size zero", "spec.size", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "zero", Namespace: ns},
		}},
		{"quota below 1 MiB", "spec.etcd.quotaBackendBytes", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "tiny-quota", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 1, Etcd: &etcdv1.EtcdSettings{QuotaBackendBytes: 1000}},
		}},
		{"unknown compaction mode", "spec.etcd.autoCompactionMode", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "mode", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 1, Etcd: &etcdv1.EtcdSettings{AutoCompactionMode: "hourly"}},
		}},
		{"duration retention in revision mode", "spec.etcd.autoCompactionRetention", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "retention", Namespace: ns},
			Spec: etcdv1.EtcdClusterSpec{Size: 1, Etcd: &etcdv1.EtcdSettings{
				AutoCompactionMode: etcdv1.AutoCompactionRevision, AutoCompactionRetention: "1h"}},
		}},
		{"malformed retention", "spec.etcd.autoCompactionRetention", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "retention-words", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 1, Etcd: &etcdv1.EtcdSettings{AutoCompactionRetention: "30 minutes"}},
		}},
		{"quota in spec.etcd and pod.env", "spec.etcd", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "quota-twice", Namespace: ns},
			Spec: etcdv1.EtcdClusterSpec{Size: 1, Etcd: &etcdv1.EtcdSettings{QuotaBackendBytes: 4 << 30},
				Pod: &etcdv1.PodPolicy{Env: []corev1.EnvVar{envVar("ETCD_QUOTA_BACKEND_BYTES", "1")}}},
		}},
		{"defragmentation schedule not cron", "spec.maintenance.defragmentationSchedule", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "defrag-words", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 1, Maintenance: &etcdv1.Maintenance{DefragmentationSchedule: "every sunday"}},
		}},
		{"defragmentation schedule of four fields", "spec.maintenance.defragmentationSchedule", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "defrag-four", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 1, Maintenance: &etcdv1.Maintenance{DefragmentationSchedule: "0 3 * *"}},
		}},
		{"defragmentation time zone without schedule", "spec.maintenance.timeZone", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "defrag-tz", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 1, Maintenance: &etcdv1.Maintenance{TimeZone: "Europe/Berlin"}},
		}},
		{"defragmentation threshold at 100%", "spec.maintenance.defragmentationThresholdPercent", &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "defrag-100", Namespace: ns},
			Spec:       etcdv1.EtcdClusterSpec{Size: 1, Maintenance: &etcdv1.Maintenance{DefragmentationThresholdPercent: 100}},
		}},
		{"backup S3 without s3", "spec.s3", &etcdv1.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "no-s3", Namespace: ns},
			Spec:       etcdv1.EtcdBackupSpec{EtcdEndpoints: []string{"http://x:2379"}, StorageType: etcdv1.BackupStorageTypeS3},
		}},
		{"negative backup interval", "spec.backupPolicy.backupInterval", &etcdv1.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "neg-interval", Namespace: ns},
			Spec: etcdv1.EtcdBackupSpec{EtcdEndpoints: []string{"http://x:2379"}, StorageType: etcdv1.BackupStorageTypePVC,
				StorageSource: etcdv1.StorageSource{PVC: &etcdv1.PVCSource{ClaimName: "c", Path: "p"}},
				BackupPolicy:  &etcdv1.BackupPolicy{BackupInterval: &metav1.Duration{Duration: -time.Minute}}},
		}},
		{"restore PVC without pvc", "spec.pvc", &etcdv1.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "no-pvc", Namespace: ns},
			Spec:       etcdv1.EtcdRestoreSpec{EtcdCluster: etcdv1.EtcdClusterRef{Name: "x"}, StorageType: etcdv1.BackupStorageTypePVC},
		}},
	}
	t.Run("v1 samples apply and read back in v1beta2", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "etcd_v1_*.yaml"))
		if err != nil || len(files) != 3 {
			t.Fatalf("want the three v1 samples, got %v (%v)", files, err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(raw, &u.Object); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			u.SetNamespace(ns)
			if err := c.Create(ctx, u); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			old := &unstructured.Unstructured{}
			old.SetAPIVersion(v1beta2.GroupVersion.String())
			old.SetKind(u.GetKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(u), old); err != nil {
				t.Fatalf("%s read as v1beta2: %v", f, err)
			}
			if old.GetAPIVersion() != v1beta2.GroupVersion.String() {
				t.Errorf("%s: read back as %s", f, old.GetAPIVersion())
			}
			// v1's spec.compression is what the controller reads in v1beta2: the annotation.
			if c, _, _ := unstructured.NestedString(u.Object, "spec", "compression"); c != "" && old.GetAnnotations()[v1beta2.BackupCompressionAnnotation] != c {
				t.Errorf("%s: spec.compression %q stored as annotations %v", f, c, old.GetAnnotations())
			}
		}
	})

	t.Run("v1 restore selection is stored as the v1beta2 annotations", func(t *testing.T) {
		before := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
		r := &etcdv1.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "pick", Namespace: ns},
			Spec: etcdv1.EtcdRestoreSpec{EtcdCluster: etcdv1.EtcdClusterRef{Name: "picked"}, StorageType: etcdv1.BackupStorageTypeS3,
				BackupRef: &etcdv1.BackupRef{Name: "nightly"}, Select: &etcdv1.BackupSelector{NewestBefore: &before}},
		}
		if err := c.Create(ctx, r); err != nil {
			t.Fatalf("create as v1 (backupRef, no s3): %v", err)
		}
		var hub v1beta2.EtcdRestore
		if err := c.Get(ctx, client.ObjectKeyFromObject(r), &hub); err != nil {
			t.Fatal(err)
		}
		a := hub.Annotations
		if a[v1beta2.RestoreBackupRefAnnotation] != "nightly" || a[v1beta2.RestoreNewestBeforeAnnotation] != "2026-12-03T10:00:00Z" || hub.Spec.S3 != nil {
			t.Errorf("v1beta2 restore: annotations %v, s3 %+v", a, hub.Spec.S3)
		}
		var v1r etcdv1.EtcdRestore
		if err := c.Get(ctx, client.ObjectKeyFromObject(r), &v1r); err != nil {
			t.Fatal(err)
		}
		if v1r.Spec.BackupRef == nil || v1r.Spec.BackupRef.Name != "nightly" || v1r.Spec.Select == nil || !v1r.Spec.Select.NewestBefore.Equal(&before) {
			t.Errorf("read back as v1: %+v %+v", v1r.Spec.BackupRef, v1r.Spec.Select)
		}
	})

	t.Run("v1 spec.etcd is stored as the v1beta2 annotations", func(t *testing.T) {
		e := &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns},
			Spec: etcdv1.EtcdClusterSpec{Size: 1, Etcd: &etcdv1.EtcdSettings{QuotaBackendBytes: 8 << 30,
				AutoCompactionMode: etcdv1.AutoCompactionPeriodic, AutoCompactionRetention: "1h30m"},
				Pod: &etcdv1.PodPolicy{Env: []corev1.EnvVar{envVar("ETCD_SNAPSHOT_COUNT", "10000")}}},
		}
		if err := c.Create(ctx, e); err != nil {
			t.Fatalf("create as v1: %v", err)
		}
		var hub v1beta2.EtcdCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), &hub); err != nil {
			t.Fatal(err)
		}
		a := hub.Annotations
		if a[v1beta2.QuotaBackendBytesAnnotation] != "8589934592" || a[v1beta2.AutoCompactionModeAnnotation] != "periodic" ||
			a[v1beta2.AutoCompactionRetentionAnnotation] != "1h30m" {
			t.Errorf("v1beta2 annotations %v", a)
		}
	})

	t.Run("v1 spec.verification is stored as the v1beta2 annotations", func(t *testing.T) {
		b := &etcdv1.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "verified", Namespace: ns},
			Spec: etcdv1.EtcdBackupSpec{StorageType: etcdv1.BackupStorageTypeS3, ClusterRef: &etcdv1.EtcdClusterRef{Name: "c"},
				StorageSource: etcdv1.StorageSource{S3: &etcdv1.S3Source{Path: "b/k", CredentialsSecret: "aws"}},
				Verification:  &etcdv1.BackupVerification{AfterEachBackup: true, Schedule: "0 3 * * *", TimeZone: "Europe/Berlin"}},
		}
		if err := c.Create(ctx, b); err != nil {
			t.Fatalf("create as v1: %v", err)
		}
		var hub v1beta2.EtcdBackup
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), &hub); err != nil {
			t.Fatal(err)
		}
		a := hub.Annotations
		if a[v1beta2.BackupVerifyAfterEachAnnotation] != "true" || a[v1beta2.BackupVerifyScheduleAnnotation] != "0 3 * * *" ||
			a[v1beta2.BackupVerifyTimeZoneAnnotation] != "Europe/Berlin" {
			t.Errorf("v1beta2 annotations %v", a)
		}
	})

	t.Run("v1 maintenance is accepted and stored as v1beta2 annotations", func(t *testing.T) {
		for i, sched := range []string{"0 3 * * 0", "@every 24h", "*/15 1-5 1,15 JAN-MAR MON-FRI"} {
			v1c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("defrag-ok-%d", i), Namespace: ns},
				Spec: etcdv1.EtcdClusterSpec{Size: 1, Maintenance: &etcdv1.Maintenance{
					DefragmentationSchedule: sched, TimeZone: "Europe/Berlin", DefragmentationThresholdPercent: 150}}}
			if err := c.Create(ctx, v1c); err != nil {
				t.Fatalf("schedule %q: %v", sched, err)
			}
			var old v1beta2.EtcdCluster
			if err := c.Get(ctx, client.ObjectKeyFromObject(v1c), &old); err != nil {
				t.Fatal(err)
			}
			if a := old.Annotations; a[v1beta2.DefragmentationScheduleAnnotation] != sched ||
				a[v1beta2.DefragmentationThresholdAnnotation] != "150" || a[v1beta2.DefragmentationTimeZoneAnnotation] != "Europe/Berlin" {
				t.Errorf("v1beta2 annotations %v", a)
			}
		}
	})
	for _, tc := range rejected {
		t.Run("v1 rejects "+tc.name, func(t *testing.T) {
			err := c.Create(ctx, tc.obj)
			if err == nil {
				t.Fatalf("accepted; want a rejection naming %s", tc.field)
			}
			var se *apierrors.StatusError
			if !apierrors.IsInvalid(err) || !errors.As(err, &se) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name %s: %v", tc.field, err)
			}
		})
	}
}

func TestSetupConversionNeedsV1InScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1beta2.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// No API server is contacted: the manager is built lazily and never started.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:                 s,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.SetupConversion(mgr); err == nil || !strings.Contains(err.Error(), "api/v1") {
		t.Fatalf("want an error asking for api/v1 in the scheme, got %v", err)
	}
}

func envVar(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }
