package olm

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// TestInstallOnAPIServer runs Install against a real kube-apiserver without nodes
// (envtest): the CRDs must be served and Established, every object applied (OLM's own
// kinds included, which the client discovers only after the CRDs), and Install must wait
// for the Deployments. Nothing runs pods here, so the test plays the Deployment
// controller: it reports both Deployments Available, and Install must then return.
// Install is then re-run over the installed OLM, once with olm-operator Available
// (a no-op that succeeds) and once without (it must fail, naming it).
func TestInstallOnAPIServer(t *testing.T) {
	cache := requireChart(t)
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.EnvtestAssets(t)}
	cfg := testenv.StartEnvtest(t, env)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)

	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- Install(ctx, c, Options{CacheDir: cache, Timeout: 2 * time.Minute, Logf: t.Logf}) }()
	for _, name := range []string{OLMOperator, CatalogOperator} {
		reportAvailable(ctx, t, c, name, true)
	}
	if err := <-done; err != nil {
		t.Fatalf("Install: %v", err)
	}
	t.Logf("installed in %v", time.Since(t0))

	og := &unstructured.Unstructured{}
	og.SetGroupVersionKind(schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1", Kind: "OperatorGroup"})
	if err := c.Get(ctx, types.NamespacedName{Namespace: OperatorsNamespace, Name: GlobalOperatorGroup}, og); err != nil {
		t.Errorf("global OperatorGroup: %v", err)
	}

	if err := Install(ctx, c, Options{CacheDir: cache, Timeout: time.Minute}); err != nil {
		t.Fatalf("Install over an installed OLM: %v", err)
	}

	reportAvailable(ctx, t, c, OLMOperator, false)
	err = Install(ctx, c, Options{CacheDir: cache, Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "Deployment "+Namespace+"/"+OLMOperator+" not Available") {
		t.Fatalf("Install with olm-operator unavailable: %v", err)
	}
	t.Log(err)
}

// reportAvailable waits for the Deployment to exist and writes the status the
// Deployment controller would: available or not, for its current generation.
func reportAvailable(ctx context.Context, t *testing.T, c client.Client, name string, available bool) {
	t.Helper()
	d := &appsv1.Deployment{}
	key := types.NamespacedName{Namespace: Namespace, Name: name}
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, key, d) == nil, nil
	})
	if err != nil {
		t.Fatalf("Deployment %s never created: %v", key, err)
	}
	status, n := corev1.ConditionFalse, int32(0)
	if available {
		status, n = corev1.ConditionTrue, 1
	}
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: status,
			LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "Test",
		}},
	}
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatalf("status of %s: %v", key, err)
	}
}
