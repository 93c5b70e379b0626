package v1beta2_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// startAPIServer runs a real kube-apiserver (envtest) with the generated CRDs installed, so
// the OpenAPI schema and CEL rules are checked by the same code a cluster runs.
func startAPIServer(t *testing.T) client.Client {
	t.Helper()
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: testenv.EnvtestAssets(t),
	}
	cfg := testenv.StartEnvtest(t, env)
	scheme := runtime.NewScheme()
	if err := etcdv1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func objectFromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	if u.GetNamespace() == "" {
		u.SetNamespace("default")
	}
	return u
}

func TestCRDAdmission(t *testing.T) {
	c := startAPIServer(t)
	ctx := context.Background()

	t.Run("samples apply unchanged", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*_v1beta2_*.yaml"))
		if err != nil || len(files) < 4 {
			t.Fatalf("expected the v1beta2 samples, got %v (%v)", files, err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, objectFromYAML(t, string(raw))); err != nil {
				t.Errorf("%s rejected: %v", filepath.Base(f), err)
			}
		}
		// The CoreOS sample must mean the same thing once read back through our types.
		var got etcdv1beta2.EtcdCluster
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "coreos-etcd-cluster"}, &got); err != nil {
			t.Fatal(err)
		}
		p := got.Spec.Pod
		if got.Spec.Size != 3 || p == nil || !p.AntiAffinity || p.DNSTimeoutInSecond != 60 ||
			p.ClusterDomain != "cluster.local" || p.Labels["team"] != "storage" || len(p.EtcdEnv) != 1 {
			t.Errorf("CoreOS sample read back differently: %+v pod=%+v", got.Spec, p)
		}
	})

	rejected := []struct {
		name, field, doc string
	}{
		{"size zero without claims", "spec.size", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: size-zero}
spec: {size: 0}`},
		{"size negative", "spec.size", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: size-negative}
spec: {size: -3}`},
		{"malformed version", "spec.version", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: bad-version}
spec: {size: 3, version: "3.6"}`},
		{"reserved label app", "spec.pod.labels", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: reserved-app}
spec: {size: 3, pod: {labels: {app: mine}}}`},
		{"reserved label etcd_", "spec.pod.labels", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: reserved-etcd}
spec: {size: 3, pod: {labels: {etcd_cluster: other}}}`},
		{"reserved annotation", "spec.pod.annotations", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: reserved-annotation}
spec: {size: 3, pod: {annotations: {etcd.version: "1"}}}`},
		{"server TLS without operator secret", "spec.TLS.static.operatorSecret", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-half}
spec: {size: 3, TLS: {static: {member: {peerSecret: p, serverSecret: s}}}}`},
		{"operator secret without server TLS", "spec.TLS.static.operatorSecret", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-other-half}
spec: {size: 3, TLS: {static: {member: {peerSecret: p}, operatorSecret: o}}}`},
		{"static and auto TLS", "spec.TLS", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-both}
spec: {size: 3, TLS: {auto: {}, static: {member: {peerSecret: p}}}}`},
		{"auto TLS lifetime below 5m", "spec.TLS.auto.certificateLifetime", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-short}
spec: {size: 3, TLS: {auto: {certificateLifetime: 1m}}}`},
		{"auto TLS renewal window as long as the lifetime", "spec.TLS.auto.renewBefore", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-renew}
spec: {size: 3, TLS: {auto: {certificateLifetime: 10m, renewBefore: 10m}}}`},
		{"auto TLS CA shorter than its certificates", "spec.TLS.auto.caLifetime", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-ca-short}
spec: {size: 3, TLS: {auto: {caLifetime: 10m}}}`},
		{"auto TLS CA step dwell below 1s", "spec.TLS.auto.caStepDwell", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-dwell}
spec: {size: 3, TLS: {auto: {caStepDwell: 0s}}}`},
		{"auto TLS CA step dwells longer than a certificate lives", "spec.TLS.auto.caStepDwell", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-dwell-long}
spec: {size: 3, TLS: {auto: {certificateLifetime: 6m}}}`},
		{"auto TLS lifetime not a duration", "spec.TLS.auto.certificateLifetime", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-junk}
spec: {size: 3, TLS: {auto: {certificateLifetime: soon}}}`},
		{"auto and cert-manager TLS", "spec.TLS", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-auto-cm}
spec: {size: 3, TLS: {auto: {}, certManager: {issuerRef: {name: ca}}}}`},
		{"cert-manager TLS issuer of another kind", "spec.TLS.certManager.issuerRef.kind", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-cm-kind}
spec: {size: 3, TLS: {certManager: {issuerRef: {name: ca, kind: Vault}}}}`},
		{"cert-manager TLS issuer without a name", "spec.TLS.certManager.issuerRef.name", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-cm-nameless}
spec: {size: 3, TLS: {certManager: {issuerRef: {kind: Issuer}}}}`},
		{"cert-manager TLS lifetime below 1h", "spec.TLS.certManager.certificateLifetime", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-cm-short}
spec: {size: 3, TLS: {certManager: {issuerRef: {name: ca}, certificateLifetime: 30m}}}`},
		{"cert-manager TLS renewal window as long as the lifetime", "spec.TLS.certManager.renewBefore", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-cm-renew}
spec: {size: 3, TLS: {certManager: {issuerRef: {name: ca}, certificateLifetime: 2h, renewBefore: 2h}}}`},
		{"backup S3 without s3", "spec.s3", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdBackup
metadata: {name: no-s3}
spec: {etcdEndpoints: ["http://x:2379"], storageType: S3}`},
		{"backup unknown storage", "spec.storageType", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdBackup
metadata: {name: ftp}
spec: {etcdEndpoints: ["http://x:2379"], storageType: FTP}`},
		{"restore without cluster name", "spec.etcdCluster.name", `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdRestore
metadata: {name: nameless}
spec: {etcdCluster: {name: ""}, backupStorageType: S3, s3: {path: b/k, awsSecret: a}}`},
	}
	for _, tc := range rejected {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			err := c.Create(ctx, objectFromYAML(t, tc.doc))
			if err == nil {
				t.Fatalf("accepted; want a rejection naming %s", tc.field)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name %s: %v", tc.field, err)
			}
		})
	}

	t.Run("auto TLS accepted", func(t *testing.T) {
		for _, doc := range []string{`
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-auto}
spec: {size: 3, TLS: {auto: {}}}`, `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-auto-short}
spec: {size: 3, TLS: {auto: {certificateLifetime: 6m, renewBefore: 3m, caLifetime: 30m, caRenewBefore: 12m, caStepDwell: 10s}}}`, `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: tls-cm}
spec: {size: 3, TLS: {certManager: {issuerRef: {name: ca, kind: ClusterIssuer, group: cert-manager.io}, certificateLifetime: 2h, renewBefore: 30m}}}`} {
			if err := c.Create(ctx, objectFromYAML(t, doc)); err != nil {
				t.Errorf("rejected: %v\n%s", err, doc)
			}
		}
	})

	// Hibernated members all come back at once on the spec: TLS and the cluster domain
	// may not change while size is 0, nor with the update that enters or leaves it (the
	// version may: the members resume on the one they ran, then roll).
	t.Run("TLS and cluster domain frozen across size 0", func(t *testing.T) {
		const base = `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: NAME}
spec: {size: SIZE, version: 3.6.16, pod: {ClusterDomain: cluster.local, persistentVolumeClaimSpec: {resources: {requests: {storage: 1Gi}}}}}`
		create := func(t *testing.T, name, size string) *unstructured.Unstructured {
			t.Helper()
			u := objectFromYAML(t, strings.NewReplacer("NAME", name, "SIZE", size).Replace(base))
			if err := c.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			return u
		}
		for _, tc := range []struct {
			name, from, to string
			change         func(u *unstructured.Unstructured)
			refused        bool
		}{
			{"TLS turned on while hibernated", "0", "0", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, map[string]any{}, "spec", "TLS", "auto")
			}, true},
			{"cluster domain changed while hibernated", "0", "0", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "example.org", "spec", "pod", "ClusterDomain")
			}, true},
			{"cluster domain changed with the resume", "0", "3", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "example.org", "spec", "pod", "ClusterDomain")
			}, true},
			{"TLS turned on with the hibernation", "3", "0", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, map[string]any{}, "spec", "TLS", "auto")
			}, true},
			{"version changed while hibernated", "0", "0", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "3.7.3", "spec", "version")
			}, false},
			{"TLS turned on while running", "3", "3", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, map[string]any{}, "spec", "TLS", "auto")
			}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				name := "frozen-" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
				u := create(t, name, tc.from)
				_ = unstructured.SetNestedField(u.Object, map[string]int64{"0": 0, "3": 3}[tc.to], "spec", "size")
				tc.change(u)
				err := c.Update(ctx, u)
				switch {
				case tc.refused && err == nil:
					t.Fatal("accepted")
				case tc.refused && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") || !strings.Contains(err.Error(), "may not change while size is 0")):
					t.Errorf("refused, but not naming spec.size and why: %v", err)
				case !tc.refused && err != nil:
					t.Errorf("refused: %v", err)
				}
			})
		}
	})

	// A running TLS cluster cannot move to cert-manager in place (its members would not
	// trust cert-manager's CA); plaintext can, and a new cluster may start with it.
	t.Run("certManager may not replace other TLS", func(t *testing.T) {
		cm := map[string]any{"issuerRef": map[string]any{"name": "ca", "kind": "Issuer", "group": "cert-manager.io"}}
		for _, tc := range []struct {
			name    string
			from    string
			refused bool
		}{
			{"from auto", `{auto: {}}`, true},
			{"from static", `{static: {member: {peerSecret: p, serverSecret: s}, operatorSecret: o}}`, true},
			{"from plaintext", ``, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				doc := "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: to-cm-" + strings.ReplaceAll(tc.name, " ", "-") + "}\nspec: {size: 3"
				if tc.from != "" {
					doc += ", TLS: " + tc.from
				}
				u := objectFromYAML(t, doc+"}")
				if err := c.Create(ctx, u); err != nil {
					t.Fatal(err)
				}
				_ = unstructured.SetNestedField(u.Object, map[string]any{"certManager": cm}, "spec", "TLS")
				err := c.Update(ctx, u)
				switch {
				case tc.refused && err == nil:
					t.Fatal("accepted")
				case tc.refused && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.TLS") || !strings.Contains(err.Error(), "may not replace")):
					t.Errorf("refused, but not naming spec.TLS and why: %v", err)
				case !tc.refused && err != nil:
					t.Errorf("refused: %v", err)
				}
			})
		}
	})

	t.Run("defaults", func(t *testing.T) {
		u := objectFromYAML(t, `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdBackup
metadata: {name: defaulted}
spec: {etcdEndpoints: ["http://x:2379"], s3: {path: b/k, awsSecret: a}}`)
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		var got etcdv1beta2.EtcdBackup
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.StorageType != etcdv1beta2.BackupStorageTypeS3 {
			t.Errorf("storageType defaulted to %q, want S3", got.Spec.StorageType)
		}
	})
}
