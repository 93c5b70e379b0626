package olm

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
)

// TestInstallOnAPIServer installs the chart's output on a real kube-apiserver (envtest:
// kube-apiserver + etcd, no controllers) and checks the server accepts every object and
// that the RBAC it creates lets the operator's ServiceAccount do what the controllers
// need, where they need it, and no more of the leader election rights than in its own
// namespace. It also submits the bundle's alm-examples (validated by the CRD schemas
// and CEL rules) and the CSV's Deployment and ClusterRole, so a catalog user's first
// click cannot fail on an invalid example or install spec.
func TestInstallOnAPIServer(t *testing.T) {
	cfg := startWithChartCRDs(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	const ns = "etcd-operator-system"
	for _, name := range []string{ns, "team-a", "olm-test"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}

	r := mustRender(t, nil)
	for _, o := range r.objs {
		if err := c.Create(ctx, o.DeepCopy()); err != nil {
			t.Errorf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	sa := one[corev1.ServiceAccount](t, r, "ServiceAccount")
	user := "system:serviceaccount:" + ns + ":" + sa.Name

	for _, tc := range []struct {
		attr    authorizationv1.ResourceAttributes
		allowed bool
	}{
		{authorizationv1.ResourceAttributes{Verb: "watch", Group: "etcd.database.coreos.com", Resource: "etcdclusters"}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "etcd.database.coreos.com", Resource: "etcdclusters", Subresource: "status", Namespace: "team-a"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "team-a"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "policy", Resource: "poddisruptionbudgets", Namespace: "team-a"}, true},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes"}, true},
		{authorizationv1.ResourceAttributes{Verb: "patch", Resource: "persistentvolumeclaims", Namespace: "team-a"}, true},
		{authorizationv1.ResourceAttributes{Verb: "list", Group: "storage.k8s.io", Resource: "storageclasses"}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "storage.k8s.io", Resource: "storageclasses"}, false},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "team-a"}, false},
		{authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, ResourceAttributes: &tc.attr,
		}}
		if err := c.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.allowed {
			t.Errorf("%s may %s %s/%s/%s in %q: %v, want %v (%s)", sa.Name, tc.attr.Verb, tc.attr.Group, tc.attr.Resource, tc.attr.Subresource, tc.attr.Namespace, sar.Status.Allowed, tc.allowed, sar.Status.Reason)
		}
	}

	b := loadCommitted(t)
	var examples []map[string]any
	if err := json.Unmarshal([]byte(b.CSV.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatal(err)
	}
	// Examples in a version other than the storage one would need the conversion
	// webhook, which does not run here; TestCRDUpgradeOnAPIServer submits those.
	storage := map[string]bool{}
	for _, crd := range crdObjects(t, r) {
		for _, v := range bundlegen.StorageVersions(crd) {
			storage[crd.Spec.Group+"/"+v+", "+crd.Spec.Names.Kind] = true
		}
	}
	for _, ex := range examples {
		u := &unstructured.Unstructured{Object: ex}
		if !storage[u.GetAPIVersion()+", "+u.GetKind()] {
			continue
		}
		u.SetNamespace("olm-test")
		if err := c.Create(ctx, u); err != nil {
			t.Errorf("alm-example %s %s rejected: %v", u.GetKind(), u.GetName(), err)
		}
	}

	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	d := spec.DeploymentSpecs[0]
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: "olm-test", Labels: d.Label}, Spec: d.Spec}
	if err := c.Create(ctx, dep); err != nil {
		t.Errorf("CSV deployment rejected: %v", err)
	}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "csv-cluster-permissions"}, Rules: spec.ClusterPermissions[0].Rules}
	if err := c.Create(ctx, cr); err != nil {
		t.Errorf("CSV clusterPermissions rejected: %v", err)
	}
}
