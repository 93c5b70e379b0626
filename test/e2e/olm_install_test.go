package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestOLMLikeInstall installs the operator the way OLM would from bundle/: the CRDs, the
// CSV's service account, permissions and clusterPermissions exactly as written, and the
// CSV's Deployment, whose pod the bench runs from a freshly built operator binary. The
// lifecycle then has to work through that pod alone, which proves the CSV's RBAC suffices.
func TestOLMLikeInstall(t *testing.T) {
	root := framework.RepoRoot(t)
	csv := readCSV(t, root)
	deployments := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deployments) != 1 || len(deployments[0].Spec.Template.Spec.Containers) == 0 {
		t.Fatalf("CSV has %d deployments; want exactly one", len(deployments))
	}
	container := deployments[0].Spec.Template.Spec.Containers[0]

	if container.Image != images.DefaultOperatorImage {
		t.Fatalf("the CSV runs image %q; the bench serves this checkout's operator as %q", container.Image, images.DefaultOperatorImage)
	}

	s := framework.NewScheme()
	b := bench.NewForTest(t, bench.Options{Scheme: s})
	c := b.Client()
	ctx := context.Background()
	if _, err := envtest.InstallCRDs(b.RestConfig(), envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "bundle", "manifests")}, ErrorIfPathMissing: true, Scheme: s,
	}); err != nil {
		t.Fatalf("install bundle CRDs: %v", err)
	}

	const ns = "etcd-operator-system"
	must := func(obj client.Object) {
		t.Helper()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
	must(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	accounts := map[string]bool{}
	for i, p := range csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions {
		if !accounts[p.ServiceAccountName] {
			must(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: p.ServiceAccountName, Namespace: ns}})
			accounts[p.ServiceAccountName] = true
		}
		name := fmt.Sprintf("csv-cluster-%d", i)
		must(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules})
		must(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: ns}}})
	}
	for i, p := range csv.Spec.InstallStrategy.StrategySpec.Permissions {
		if !accounts[p.ServiceAccountName] {
			must(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: p.ServiceAccountName, Namespace: ns}})
			accounts[p.ServiceAccountName] = true
		}
		name := fmt.Sprintf("csv-ns-%d", i)
		must(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: p.Rules})
		must(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: ns}}})
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: deployments[0].Name, Namespace: ns}, Spec: deployments[0].Spec}
	// OLM annotates the pod template with the OperatorGroup's target namespaces; "" is
	// the AllNamespaces install mode.
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["olm.targetNamespaces"] = ""
	must(d)

	if err := framework.Poll(3*time.Minute, deploymentAvailable(ctx, c, d)); err != nil {
		logOperatorPods(t, b, ns)
		t.Fatalf("the CSV's Deployment never became available: %v", err)
	}

	e := framework.Attach(t, b)
	const name = "olm"
	e.Create(newCluster(name, 3))
	if !waitAvailableOrLog(t, e, b, ns, name, 3) {
		return
	}
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 1 })
	waitAvailableOrLog(t, e, b, ns, name, 1)
}

func waitAvailableOrLog(t *testing.T, e *framework.Env, b *bench.Bench, ns, name string, size int) bool {
	t.Cleanup(func() {
		if t.Failed() {
			logOperatorPods(t, b, ns)
		}
	})
	e.WaitAvailable(name, size, 3*time.Minute)
	return !t.Failed()
}

func logOperatorPods(t *testing.T, b *bench.Bench, ns string) {
	var pods corev1.PodList
	if err := b.Client().List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		return
	}
	for _, p := range pods.Items {
		t.Logf("operator pod %s phase=%s statuses=%+v", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
		if out, err := b.PodLogs(context.Background(), ns, p.Name, "manager"); err == nil {
			if len(out) > 4000 {
				out = out[len(out)-4000:]
			}
			t.Logf("manager log tail:\n%s", out)
		}
	}
}

func readCSV(t *testing.T, root string) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "bundle", "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(files) != 1 {
		t.Fatalf("want one CSV in bundle/manifests, got %v (%v)", files, err)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		t.Fatalf("parse %s: %v", files[0], err)
	}
	return &csv
}
