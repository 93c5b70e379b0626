package bundlegen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

const baseCRD = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s.example.com
spec:
  group: example.com
  names:
    kind: %s
    plural: %s
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
`

// crdRoot writes a repository root holding config/crd with the given kustomization and
// extra files (path relative to config/crd -> content), and CRDs "as" and "bs".
func crdRoot(t *testing.T, kustomization string, extra map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"kustomization.yaml":        kustomization,
		"bases/example.com_bs.yaml": strings.NewReplacer("%s.example.com", "bs.example.com", "kind: %s", "kind: B", "plural: %s", "plural: bs").Replace(baseCRD),
		"bases/example.com_as.yaml": strings.NewReplacer("%s.example.com", "as.example.com", "kind: %s", "kind: A", "plural: %s", "plural: as").Replace(baseCRD),
	}
	for k, v := range extra {
		files[k] = v
	}
	for p, data := range files {
		full := filepath.Join(root, "config/crd", p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const twoResources = "resources:\n- bases/example.com_bs.yaml\n- bases/example.com_as.yaml\n"

const conversionPatch = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: as.example.com
spec:
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service:
          name: svc
          namespace: ns
          path: /convert
          port: 443
      conversionReviewVersions: [v1]
`

// TestReadCRDsAppliesPatches: the three patch forms kustomize offers change exactly the
// CRDs they target, and the output is ordered by file name whatever the resource order.
func TestReadCRDsAppliesPatches(t *testing.T) {
	root := crdRoot(t, twoResources+`patches:
- path: patches/conversion_as.yaml
- path: patches/label_bs.yaml
  target: {kind: CustomResourceDefinition, name: bs.example.com}
- patch: |-
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: ignored-because-targeted
      annotations: {inline: "yes"}
  target: {group: apiextensions.k8s.io, version: v1, kind: CustomResourceDefinition}
`, map[string]string{
		"patches/conversion_as.yaml": conversionPatch,
		"patches/label_bs.yaml":      "- op: add\n  path: /metadata/labels\n  value: {json6902: \"yes\"}\n",
	})
	crds, err := readCRDs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 2 || crds[0].file != "example.com_as.yaml" || crds[1].file != "example.com_bs.yaml" {
		t.Fatalf("files %v, want as then bs", crds)
	}
	a, b := crds[0].crd, crds[1].crd
	if a.Spec.Conversion == nil || a.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter ||
		a.Spec.Conversion.Webhook.ClientConfig.Service.Name != "svc" || *a.Spec.Conversion.Webhook.ClientConfig.Service.Path != "/convert" {
		t.Errorf("as conversion %+v, want the patched webhook", a.Spec.Conversion)
	}
	if b.Spec.Conversion != nil {
		t.Errorf("bs got a conversion it was not patched with: %+v", b.Spec.Conversion)
	}
	if b.Labels["json6902"] != "yes" || a.Labels["json6902"] != "" {
		t.Errorf("JSON 6902 labels: as %v, bs %v; want only bs", a.Labels, b.Labels)
	}
	// A targeted merge patch applies to every target; the name inside it does not rename.
	for _, c := range []*apiextensionsv1.CustomResourceDefinition{a, b} {
		if c.Annotations["inline"] != "yes" || !strings.HasSuffix(c.Name, ".example.com") {
			t.Errorf("%s annotations %v", c.Name, c.Annotations)
		}
	}
	if a.Spec.Versions[0].Schema == nil || a.Spec.Names.Plural != "as" {
		t.Error("the patch lost the rest of the CRD")
	}
	if !strings.HasPrefix(string(crds[0].raw), "---\napiVersion: apiextensions.k8s.io/v1\n") {
		t.Errorf("output starts %q", string(crds[0].raw[:40]))
	}
	again, err := readCRDs(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range crds {
		if string(again[i].raw) != string(crds[i].raw) {
			t.Errorf("%s differs between two runs", crds[i].file)
		}
	}
}

// TestReadCRDsRefuses: whatever the generator cannot reproduce exactly as kustomize
// would is an error, not silently different output.
func TestReadCRDsRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		kustomization string
		extra         map[string]string
		want          string
	}{
		"unimplemented field":       {twoResources + "namePrefix: x-\n", nil, "does not implement"},
		"unlisted base":             {"resources:\n- bases/example.com_as.yaml\n", nil, "example.com_bs.yaml is not listed"},
		"missing resource":          {twoResources + "- bases/nope.yaml\n", nil, "nope.yaml"},
		"patch matches none":        {twoResources + "patches:\n- path: p.yaml\n", map[string]string{"p.yaml": strings.Replace(conversionPatch, "as.example.com", "zs.example.com", 1)}, "matches no CRD"},
		"json6902 untargeted":       {twoResources + "patches:\n- path: p.yaml\n", map[string]string{"p.yaml": "- op: remove\n  path: /spec/scope\n"}, "needs a target"},
		"json6902 bad path":         {twoResources + "patches:\n- path: p.yaml\n  target: {name: as.example.com}\n", map[string]string{"p.yaml": "- op: remove\n  path: /spec/nothing\n"}, "p.yaml on example.com_as.yaml"},
		"smp directive":             {twoResources + "patches:\n- path: p.yaml\n", map[string]string{"p.yaml": conversionPatch + "  $patch: replace\n"}, "directives"},
		"misspelt field":            {twoResources + "patches:\n- path: p.yaml\n", map[string]string{"p.yaml": strings.Replace(conversionPatch, "strategy:", "stratgy:", 1)}, "after patches"},
		"untargeted nameless":       {twoResources + "patches:\n- path: p.yaml\n", map[string]string{"p.yaml": "spec:\n  scope: Cluster\n"}, "must name its kind"},
		"not a crd":                 {"resources:\n- ns.yaml\n- bases/example.com_as.yaml\n- bases/example.com_bs.yaml\n", map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"}, "not one CustomResourceDefinition"},
		"two objects in a resource": {twoResources, map[string]string{"bases/example.com_as.yaml": strings.NewReplacer("%s", "as", "kind: %s", "kind: A").Replace(baseCRD) + "---\n" + strings.NewReplacer("%s", "cs", "kind: %s", "kind: C").Replace(baseCRD)}, "more than one object"},
		"path and inline both":      {twoResources + "patches:\n- path: p.yaml\n  patch: 'x: y'\n", map[string]string{"p.yaml": conversionPatch}, "both"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readCRDs(crdRoot(t, tc.kustomization, tc.extra))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
