package olm

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
)

// requireChart returns the tool cache when hack/tools.sh olm has filled it.
func requireChart(t *testing.T) string {
	t.Helper()
	testenv.Require(t, filepath.Join("olm-"+images.OLMVersion, ".done"))
	return testenv.CacheDir()
}

func find(objs []*unstructured.Unstructured, kind, ns, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	return nil
}

func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &out, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return &out
}

func TestRenderIsUpstreamsReleaseWithBenchImages(t *testing.T) {
	m, err := Render(requireChart(t))
	if err != nil {
		t.Fatal(err)
	}

	var crds []string
	for _, c := range m.CRDs {
		if c.GetAPIVersion() != "apiextensions.k8s.io/v1" || c.GetKind() != "CustomResourceDefinition" {
			t.Errorf("CRD %s is a %s %s", c.GetName(), c.GetAPIVersion(), c.GetKind())
		}
		crds = append(crds, c.GetName())
	}
	slices.Sort(crds)
	want := []string{"catalogsources", "clusterserviceversions", "installplans", "olmconfigs",
		"operatorconditions", "operatorgroups", "operators", "subscriptions"}
	for i := range want {
		want[i] += ".operators.coreos.com"
	}
	if !slices.Equal(crds, want) {
		t.Errorf("CRDs %v, want %v", crds, want)
	}

	for _, ns := range []string{Namespace, OperatorsNamespace} {
		if find(m.Objects, "Namespace", "", ns) == nil {
			t.Errorf("no Namespace %s", ns)
		}
	}
	if m.Objects[0].GetKind() != "Namespace" || m.Objects[1].GetKind() != "Namespace" {
		t.Errorf("objects start with %s %s: namespaces must come first", m.Objects[0].GetKind(), m.Objects[0].GetName())
	}
	og := find(m.Objects, "OperatorGroup", OperatorsNamespace, GlobalOperatorGroup)
	if og == nil {
		t.Fatalf("no OperatorGroup %s/%s", OperatorsNamespace, GlobalOperatorGroup)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(og.Object, "spec", "targetNamespaces"); found {
		t.Errorf("the global OperatorGroup names target namespaces: %v", og.Object["spec"])
	}

	// olm-operator and catalog-operator run as a service account bound to a role that
	// may do anything: OLM grants operators whatever their CSVs ask for.
	const sa = "olm-operator-serviceaccount"
	if find(m.Objects, "ServiceAccount", Namespace, sa) == nil {
		t.Errorf("no ServiceAccount %s/%s", Namespace, sa)
	}
	crb := find(m.Objects, "ClusterRoleBinding", "", "olm-operator-binding-"+Namespace)
	if crb == nil {
		t.Fatal("no ClusterRoleBinding for OLM's service account")
	}
	binding := typed[rbacv1.ClusterRoleBinding](t, crb)
	if len(binding.Subjects) != 1 || binding.Subjects[0].Name != sa || binding.Subjects[0].Namespace != Namespace ||
		find(m.Objects, "ClusterRole", "", binding.RoleRef.Name) == nil {
		t.Errorf("ClusterRoleBinding %+v does not bind a rendered ClusterRole to %s/%s", binding, Namespace, sa)
	}

	olm := deployment(t, m, OLMOperator)
	catalog := deployment(t, m, CatalogOperator)
	for _, d := range []*appsv1.Deployment{olm, catalog} {
		if got := d.Spec.Template.Spec.ServiceAccountName; got != sa {
			t.Errorf("%s runs as %q, want %s", d.Name, got, sa)
		}
	}
	wantContainer(t, olm, images.OLMImage, images.OLMBinary)
	args := wantContainer(t, catalog, images.OLMImage, images.CatalogBinary)
	if !slices.Contains(args, "--opmImage="+images.OPMImage) {
		t.Errorf("catalog-operator args %q lack --opmImage=%s (bundle unpack Jobs run opm from it)", args, images.OPMImage)
	}
	if i := slices.Index(args, "--util-image"); i < 0 || i+1 >= len(args) || args[i+1] != images.OLMImage {
		t.Errorf("catalog-operator args %q lack --util-image %s (unpack Jobs copy /bin/cpb from it)", args, images.OLMImage)
	}

	for _, o := range append(slices.Clone(m.CRDs), m.Objects...) {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			t.Errorf("%s %s needs cert-manager", o.GetKind(), o.GetName())
		}
		if why := skipped(o); why != "" {
			t.Errorf("%s %s rendered although skipped: %s", o.GetKind(), o.GetName(), why)
		}
	}
}

func deployment(t *testing.T, m *Manifests, name string) *appsv1.Deployment {
	t.Helper()
	u := find(m.Objects, "Deployment", Namespace, name)
	if u == nil {
		t.Fatalf("no Deployment %s/%s", Namespace, name)
	}
	return typed[appsv1.Deployment](t, u)
}

// wantContainer checks a Deployment runs one container from image with command and
// returns its args.
func wantContainer(t *testing.T, d *appsv1.Deployment, image, command string) []string {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%s has %d containers", d.Name, len(cs))
	}
	if cs[0].Image != image || !slices.Equal(cs[0].Command, []string{command}) {
		t.Errorf("%s runs %q from %s, want %q from %s", d.Name, cs[0].Command, cs[0].Image, command, image)
	}
	if cs[0].ImagePullPolicy == "Always" {
		t.Errorf("%s pulls Always; the bench registry serves a fixed tag", d.Name)
	}
	return cs[0].Args
}

func TestRenderNeedsTheCache(t *testing.T) {
	if _, err := Render(t.TempDir()); err == nil || !strings.Contains(err.Error(), "hack/tools.sh olm") {
		t.Fatalf("Render of an empty cache: %v", err)
	}
}

func TestSetValueNestsAsHelmSet(t *testing.T) {
	vals := map[string]any{"olm": map[string]any{"image": map[string]any{"ref": "x", "pullPolicy": "Always"}}, "s": "v"}
	for k, v := range map[string]any{"olm.image.ref": "y", "certManager.enabled": false} {
		if err := setValue(vals, k, v); err != nil {
			t.Fatal(err)
		}
	}
	img := vals["olm"].(map[string]any)["image"].(map[string]any)
	if img["ref"] != "y" || img["pullPolicy"] != "Always" {
		t.Errorf("olm.image = %v, want ref y and pullPolicy kept", img)
	}
	if cm, ok := vals["certManager"].(map[string]any); !ok || cm["enabled"] != false {
		t.Errorf("certManager = %v", vals["certManager"])
	}
	if err := setValue(vals, "s.x", 1); err == nil {
		t.Error("set a key under a string value")
	}
}

func TestDecodeSkipsEmptyDocumentsAndRejectsKindless(t *testing.T) {
	objs, err := decode("x.yaml", []byte("---\n# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n\n"))
	if err != nil || len(objs) != 1 || objs[0].GetName() != "a" {
		t.Fatalf("decode = %v, %v; want one Namespace a", objs, err)
	}
	if _, err := decode("y.yaml", []byte("metadata:\n  name: b\n")); err == nil {
		t.Error("decoded a document without kind")
	}
}
