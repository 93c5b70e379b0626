package olm

import (
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// kustomizeBin matches KUSTOMIZE in the Makefile (cached by hack/tools.sh gen).
const kustomizeBin = "bin/kustomize-v5.8.2"

// TestKustomizeManifestsAgree builds config/manifests with kustomize, as operator-sdk's
// flow would, and checks it yields the CSV base, every CRD, and a Deployment and
// ServiceAccount with the names the generated CSV uses: the generator applies
// config/default's namePrefix itself, and this catches it disagreeing with kustomize.
func TestKustomizeManifestsAgree(t *testing.T) {
	kustomize := testenv.Require(t, kustomizeBin)
	out, err := exec.Command(kustomize, "build", root+"/config/manifests").Output()
	if err != nil {
		t.Fatalf("kustomize build config/manifests: %v", err)
	}
	byKind := map[string][]string{}
	for _, o := range readObjects(t, out) {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o.GetName())
	}
	if len(byKind["ClusterServiceVersion"]) != 1 {
		t.Errorf("kustomize output has CSVs %v, want the one base", byKind["ClusterServiceVersion"])
	}
	if got, want := len(byKind["CustomResourceDefinition"]), len(configCRDs(t)); got != want {
		t.Errorf("kustomize output has %d CRDs, config/crd/bases %d", got, want)
	}
	csv := loadCommitted(t).CSV
	dep := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0]
	if d := byKind["Deployment"]; len(d) != 1 || d[0] != dep.Name {
		t.Errorf("kustomize Deployment %v, CSV deployment %q", d, dep.Name)
	}
	if sa := byKind["ServiceAccount"]; len(sa) != 1 || sa[0] != dep.Spec.Template.Spec.ServiceAccountName {
		t.Errorf("kustomize ServiceAccount %v, CSV service account %q", sa, dep.Spec.Template.Spec.ServiceAccountName)
	}
}

// kustomizeBuild runs the cached kustomize on a config/ directory.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	kustomize := testenv.Require(t, kustomizeBin)
	out, err := exec.Command(kustomize, "build", filepath.Join(root, dir)).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr)
	}
	return readObjects(t, out)
}

// TestKustomizeCRDsAgree checks the generator's own application of
// config/crd/kustomization.yaml (which the bundle and the chart ship) gives exactly the
// objects `kustomize build config/crd` does: the generator implements a few kustomize
// features itself, in Go and deterministically, and this is what keeps it honest.
func TestKustomizeCRDsAgree(t *testing.T) {
	want := map[string]map[string]any{}
	for _, o := range kustomizeBuild(t, "config/crd") {
		want[o.GetName()] = o.Object
	}
	got := map[string]map[string]any{}
	for file, data := range installedCRDs(t) {
		objs := readObjects(t, data)
		if len(objs) != 1 {
			t.Fatalf("%s holds %d objects", file, len(objs))
		}
		got[objs[0].GetName()] = objs[0].Object
	}
	if len(got) != len(want) {
		t.Errorf("generator gives %d CRDs, kustomize %d", len(got), len(want))
	}
	for name, w := range want {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("CRD %s differs from kustomize's: generator spec.conversion %v, kustomize %v",
				name, nested(got[name], "spec", "conversion"), nested(w, "spec", "conversion"))
		}
	}
}

// TestKustomizeWebhookServiceServesCRDs checks the plain install (`kustomize build
// config/default`) reaches the conversion webhook: each converting CRD's
// clientConfig.service names a Service of that install, in its namespace, whose port is
// the CRD's and which selects the manager's pods and forwards to its webhook port.
func TestKustomizeWebhookServiceServesCRDs(t *testing.T) {
	objs := kustomizeBuild(t, "config/default")
	services := map[string]*corev1.Service{}
	var manager *appsv1.Deployment
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		switch o.GetKind() {
		case "Service":
			s := &corev1.Service{}
			fromUnstructured(t, o, s)
			services[s.Namespace+"/"+s.Name] = s
		case "Deployment":
			manager = &appsv1.Deployment{}
			fromUnstructured(t, o, manager)
		case "CustomResourceDefinition":
			c := &apiextensionsv1.CustomResourceDefinition{}
			fromUnstructured(t, o, c)
			crds = append(crds, c)
		}
	}
	converting := webhookCRDs(t, crds)
	if len(converting) == 0 {
		t.Log("no CRD converts through a webhook: nothing to check")
		return
	}
	if manager == nil {
		t.Fatal("config/default has no Deployment")
	}
	port := bundlegen.DefaultWebhookPort
	c := manager.Spec.Template.Spec.Containers[0]
	for _, p := range c.Ports {
		if p.Name == bundlegen.WebhookPortName {
			port = int(p.ContainerPort)
		}
	}
	for _, crd := range converting {
		ref := crd.Spec.Conversion.Webhook.ClientConfig.Service
		s, ok := services[ref.Namespace+"/"+ref.Name]
		if !ok {
			t.Errorf("CRD %s converts through Service %s/%s, which config/default does not create (it has %v)", crd.Name, ref.Namespace, ref.Name, keys(services))
			continue
		}
		var sp *corev1.ServicePort
		for i := range s.Spec.Ports {
			if ref.Port != nil && s.Spec.Ports[i].Port == *ref.Port {
				sp = &s.Spec.Ports[i]
			}
		}
		if sp == nil {
			t.Errorf("Service %s has no port %v for CRD %s", s.Name, ref.Port, crd.Name)
			continue
		}
		target := sp.TargetPort.IntValue()
		if sp.TargetPort.StrVal != "" {
			target = 0
			for _, p := range c.Ports {
				if p.Name == sp.TargetPort.StrVal {
					target = int(p.ContainerPort)
				}
			}
		}
		if target != port {
			t.Errorf("Service %s forwards to %v (%d), the manager's webhook port is %d", s.Name, sp.TargetPort.String(), target, port)
		}
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(manager.Spec.Template.Labels)) {
			t.Errorf("Service %s selector %v does not select the manager pods %v", s.Name, s.Spec.Selector, manager.Spec.Template.Labels)
		}
	}
}

func fromUnstructured(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

func nested(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
