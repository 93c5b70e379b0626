// Package olm installs Operator Lifecycle Manager (OLM v0) on a bench the way upstream's
// release does: its CRDs and the rendered install chart (namespaces olm and operators,
// RBAC, the global OperatorGroup, the olm-operator and catalog-operator Deployments), with
// the images test/bench/images builds from hack/tools.sh's olm target. Upstream's chart and
// release values come from the tool cache, so nothing of OLM is copied into this
// repository: a release renders `helm template -n olm -f deploy/upstream/values.yaml
// --include-crds deploy/chart` with its image references set, and so does Render.
package olm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/test/bench/images"
)

const (
	// Namespace is where OLM runs and its global catalogs live (upstream's values:
	// namespace and catalog_namespace).
	Namespace = "olm"
	// OperatorsNamespace holds the global OperatorGroup: an operator subscribed there
	// watches all namespaces (upstream's values: operator_namespace).
	OperatorsNamespace = "operators"
	// GlobalOperatorGroup is the OperatorGroup upstream creates in OperatorsNamespace.
	GlobalOperatorGroup = "global-operators"
	// OLMOperator and CatalogOperator are the two Deployments in Namespace.
	OLMOperator     = "olm-operator"
	CatalogOperator = "catalog-operator"
)

// Manifests is OLM as Render makes it.
type Manifests struct {
	// CRDs are the chart's crds/ (helm's --include-crds), in file order.
	CRDs []*unstructured.Unstructured
	// Objects are the rendered templates in file order (upstream names its files so
	// that this is the order to create them in: namespaces first).
	Objects []*unstructured.Unstructured
}

// releaseValues are set over upstream's release values, as its release script sets the
// image references with yq before rendering.
func releaseValues() map[string]any {
	return map[string]any{
		"olm.image.ref":            images.OLMImage,
		"catalog.image.ref":        images.OLMImage,
		"package.image.ref":        images.OLMImage,
		"catalog.opmImageArgs":     "--opmImage=" + images.OPMImage,
		"olm.image.pullPolicy":     "IfNotPresent",
		"catalog.image.pullPolicy": "IfNotPresent",
		// v0.36.0's chart defaults to serving metrics over TLS from a cert-manager
		// Certificate, which its release therefore needs (an Issuer and a Certificate
		// fail to apply without cert-manager's CRDs). Upstream turned it off by default
		// right after v0.36.0; metrics are then plain HTTP on :8080, as before.
		"certManager.enabled": false,
	}
}

// skipped reports the rendered objects the bench leaves out, and why.
func skipped(u *unstructured.Unstructured) string {
	switch {
	case u.GetKind() == "CatalogSource" && u.GetName() == "operatorhubio-catalog":
		return "its image is on a registry the bench cannot reach"
	case u.GetKind() == "ClusterServiceVersion" && u.GetName() == "packageserver":
		return "the PackageManifest API server (package-server is not built; no install path here reads PackageManifests)"
	}
	return ""
}

// Render renders upstream's install chart from the tool cache (images.OLMChartDir) with
// its release values (images.OLMReleaseValues) and releaseValues, and drops the objects
// skipped names.
func Render(cacheDir string) (*Manifests, error) {
	ch, err := loader.LoadDir(images.OLMChartDir(cacheDir))
	if err != nil {
		return nil, fmt.Errorf("OLM's chart (run hack/tools.sh olm): %w", err)
	}
	vals, err := chartutil.ReadValuesFile(images.OLMReleaseValues(cacheDir))
	if err != nil {
		return nil, fmt.Errorf("OLM's release values (run hack/tools.sh olm): %w", err)
	}
	for k, v := range releaseValues() {
		if err := setValue(vals, k, v); err != nil {
			return nil, err
		}
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "olm", Namespace: Namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	rendered, err := engine.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("render OLM's chart: %w", err)
	}
	var m Manifests
	for _, crd := range ch.CRDObjects() {
		objs, err := decode(crd.Filename, crd.File.Data)
		if err != nil {
			return nil, err
		}
		m.CRDs = append(m.CRDs, objs...)
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		if !strings.HasPrefix(path.Base(name), "_") && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		objs, err := decode(name, []byte(rendered[name]))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if skipped(o) == "" {
				m.Objects = append(m.Objects, o)
			}
		}
	}
	if len(m.CRDs) == 0 || len(m.Objects) == 0 {
		return nil, fmt.Errorf("OLM's chart rendered %d CRDs and %d objects", len(m.CRDs), len(m.Objects))
	}
	return &m, nil
}

// setValue sets a dotted key in helm values, as `helm --set a.b.c=v` does.
func setValue(vals map[string]any, key string, v any) error {
	parts := strings.Split(key, ".")
	m := vals
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			if m[p] != nil {
				return fmt.Errorf("value %s: %s is not a table", key, p)
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	return nil
}

// decode splits a YAML stream into objects, skipping empty documents.
func decode(name string, data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: a document without kind or apiVersion", name)
		}
		out = append(out, u)
	}
}
