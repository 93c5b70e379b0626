package olm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
)

const bundleDir = root + "/bundle"

// committedOptions recovers the generator options the committed bundle was made with
// from the bundle itself, so the staleness check keeps working after `make bundle
// VERSION=…` bumps the version.
func committedOptions(t *testing.T, b *manifests.Bundle) bundlegen.Options {
	t.Helper()
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(bundleDir, "metadata/annotations.yaml")), &ann); err != nil {
		t.Fatal(err)
	}
	return bundlegen.Options{
		Root:           root,
		Version:        b.CSV.Spec.Version.String(),
		Replaces:       b.CSV.Spec.Replaces,
		SkipRange:      b.CSV.Annotations["olm.skipRange"],
		Channels:       strings.Split(ann.Annotations["operators.operatorframework.io.bundle.channels.v1"], ","),
		DefaultChannel: ann.Annotations["operators.operatorframework.io.bundle.channel.default.v1"],
		Image:          b.CSV.Annotations["containerImage"],
	}
}

func loadCommitted(t *testing.T) *manifests.Bundle {
	t.Helper()
	b, err := manifests.GetBundleFromDir(bundleDir)
	if err != nil {
		t.Fatalf("load %s: %v", bundleDir, err)
	}
	return b
}

// TestCommittedBundleValidates runs OLM's validators on bundle/ as committed.
func TestCommittedBundleValidates(t *testing.T) {
	b := validateBundle(t, bundleDir)
	if b.Package != bundlegen.PackageName {
		t.Errorf("package %q, want %q", b.Package, bundlegen.PackageName)
	}
	if len(b.Channels) == 0 || b.DefaultChannel == "" {
		t.Errorf("channels %q default %q: both must be set", b.Channels, b.DefaultChannel)
	}
	if want := bundlegen.CSVName(b.CSV.Spec.Version.String()); b.CSV.Name != want {
		t.Errorf("CSV name %q, want %q", b.CSV.Name, want)
	}
}

// TestCommittedBundleIsUpToDate regenerates the bundle from config/ into a temporary
// directory and requires bundle/ and bundle.Dockerfile to be byte-identical to it, with no
// extra files: anyone who changes the CRDs, RBAC, manager Deployment, samples or the CSV
// base must run `make bundle` and commit the result.
func TestCommittedBundleIsUpToDate(t *testing.T) {
	o := committedOptions(t, loadCommitted(t))
	out := t.TempDir()
	if err := bundlegen.Write(o, filepath.Join(out, "bundle"), filepath.Join(out, "bundle.Dockerfile")); err != nil {
		t.Fatal(err)
	}
	want := treeFiles(t, out, "bundle")
	got := treeFiles(t, root, "bundle")
	want["bundle.Dockerfile"] = readFile(t, filepath.Join(out, "bundle.Dockerfile"))
	got["bundle.Dockerfile"] = readFile(t, filepath.Join(root, "bundle.Dockerfile"))
	compareTrees(t, got, want, fmt.Sprintf("make bundle VERSION=%s", o.Version))
}

// TestChartCopiesAreUpToDate checks the install chart's copies of config/ (crds/ and
// files/manager-role.yaml) are what `make bundle` writes.
func TestChartCopiesAreUpToDate(t *testing.T) {
	files, err := bundlegen.ChartFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, f := range files {
		want[f.Path] = f.Data
	}
	got := treeFiles(t, chartDir, "crds")
	got["files/manager-role.yaml"] = readFile(t, filepath.Join(chartDir, "files/manager-role.yaml"))
	compareTrees(t, got, want, "make bundle")
}

// TestGenerationIsDeterministic generates the same bundle twice and compares bytes, so
// the staleness check above cannot flap on map order or timestamps.
func TestGenerationIsDeterministic(t *testing.T) {
	o := bundlegen.Options{Root: root, Version: "0.1.0", Channels: []string{"alpha"}, Image: "example.com/etcd-operator:v0.1.0"}
	var trees []map[string][]byte
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		if err := bundlegen.Write(o, filepath.Join(dir, "bundle"), filepath.Join(dir, "bundle.Dockerfile")); err != nil {
			t.Fatal(err)
		}
		tree := treeFiles(t, dir, "bundle")
		tree["bundle.Dockerfile"] = readFile(t, filepath.Join(dir, "bundle.Dockerfile"))
		trees = append(trees, tree)
	}
	compareTrees(t, trees[1], trees[0], "(generator is not deterministic)")
}

// TestEveryCRDIsOwned requires every CRD in config/crd/bases to be shipped in the bundle
// as config/crd's kustomization builds it (with the conversion patches) and owned by the
// CSV, per served version, with a display name, description
// and descriptors whose paths exist in the CRD's schema.
func TestEveryCRDIsOwned(t *testing.T) {
	b := loadCommitted(t)
	owned := map[string]v1alpha1.CRDDescription{}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		owned[d.Name+"/"+d.Version] = d
	}
	crds := configCRDs(t)
	installed := installedCRDs(t)
	if len(crds) < 3 {
		t.Fatalf("expected at least the three v1beta2 CRDs, found %d", len(crds))
	}
	for file, crd := range crds {
		if got, want := readFile(t, filepath.Join(bundleDir, "manifests", file)), installed[file]; !bytes.Equal(got, want) {
			t.Errorf("bundle/manifests/%s differs from config/crd's output for it", file)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			key := crd.Name + "/" + v.Name
			d, ok := owned[key]
			if !ok {
				t.Errorf("CRD %s is not owned by the CSV", key)
				continue
			}
			delete(owned, key)
			if d.Kind != crd.Spec.Names.Kind || d.DisplayName == "" || d.Description == "" {
				t.Errorf("owned %s: kind %q displayName %q description %q; want kind %q and both texts", key, d.Kind, d.DisplayName, d.Description, crd.Spec.Names.Kind)
			}
			if len(d.SpecDescriptors) == 0 || len(d.StatusDescriptors) == 0 {
				t.Errorf("owned %s has no spec or status descriptors", key)
			}
			for _, sd := range d.SpecDescriptors {
				if err := schemaHasPath(v.Schema.OpenAPIV3Schema, "spec."+sd.Path); err != nil {
					t.Errorf("owned %s specDescriptor %q: %v", key, sd.Path, err)
				}
			}
			for _, sd := range d.StatusDescriptors {
				if err := schemaHasPath(v.Schema.OpenAPIV3Schema, "status."+sd.Path); err != nil {
					t.Errorf("owned %s statusDescriptor %q: %v", key, sd.Path, err)
				}
			}
		}
	}
	for key := range owned {
		t.Errorf("CSV owns %s, which config/crd/bases does not serve", key)
	}
}

// schemaHasPath walks a dotted descriptor path (with optional [N] indexes) down an
// OpenAPI schema.
func schemaHasPath(s *apiextensionsv1.JSONSchemaProps, p string) error {
	if s == nil {
		return fmt.Errorf("no schema")
	}
	cur := s
	for _, seg := range strings.Split(p, ".") {
		name, idx, _ := strings.Cut(seg, "[")
		next, ok := cur.Properties[name]
		if !ok {
			return fmt.Errorf("no property %q in the CRD schema", name)
		}
		cur = &next
		if idx != "" {
			if cur.Items == nil || cur.Items.Schema == nil {
				return fmt.Errorf("%q is indexed but is not an array", name)
			}
			cur = cur.Items.Schema
		}
	}
	return nil
}

// TestInstallStrategyMatchesConfig checks the CSV installs what config/ describes: the
// manager Deployment with the bundle's image, the ClusterRole rules controller-gen
// generated, the leader election Role rules, all for one ServiceAccount, and that the
// operator is told the OperatorGroup's target namespace.
func TestInstallStrategyMatchesConfig(t *testing.T) {
	b := loadCommitted(t)
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	if b.CSV.Spec.InstallStrategy.StrategyName != v1alpha1.InstallStrategyNameDeployment || len(spec.DeploymentSpecs) != 1 {
		t.Fatalf("want one deployment install strategy, got %q with %d deployments", b.CSV.Spec.InstallStrategy.StrategyName, len(spec.DeploymentSpecs))
	}
	dep := spec.DeploymentSpecs[0]
	sa := dep.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		t.Fatal("deployment has no service account")
	}

	if len(spec.ClusterPermissions) != 1 || spec.ClusterPermissions[0].ServiceAccountName != sa {
		t.Fatalf("clusterPermissions %+v: want one entry for %s", spec.ClusterPermissions, sa)
	}
	// Under OLM the CRDs' CA is OLM's to inject: the CSV asks for everything else.
	if got, want := spec.ClusterPermissions[0].Rules, bundlegen.WithoutCRDAccess(configClusterRoleRules(t)); !reflect.DeepEqual(got, want) {
		t.Errorf("clusterPermissions rules differ from config/rbac/role.yaml:\n got %+v\nwant %+v", got, want)
	}
	if len(bundlegen.WithoutCRDAccess(configClusterRoleRules(t))) == len(configClusterRoleRules(t)) {
		t.Error("config/rbac/role.yaml has no CRD rule to drop: the self-provisioned certificates need it")
	}
	var le rbacv1.Role
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(root, "config/rbac/leader_election_role.yaml")), &le); err != nil {
		t.Fatal(err)
	}
	// The install namespace's permissions: leader election and the manager's own Role
	// (the restore-pin key Secret; without it pins and markers are never trusted).
	want := append(slices.Clone(le.Rules), configNamespacedRoleRules(t)...)
	if len(spec.Permissions) != 1 || spec.Permissions[0].ServiceAccountName != sa || !reflect.DeepEqual(spec.Permissions[0].Rules, want) {
		t.Errorf("permissions %+v: want the leader election rules and config/rbac/role.yaml's Role for %s", spec.Permissions, sa)
	}
	if !slices.ContainsFunc(want, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "secrets") && slices.Contains(r.Verbs, "create")
	}) {
		t.Error("no namespaced rule lets the operator create its restore-pin key Secret")
	}

	var manager *corev1.Container
	for i, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == bundlegen.ManagerContainer {
			manager = &dep.Spec.Template.Spec.Containers[i]
		}
	}
	if manager == nil {
		t.Fatal("no manager container")
	}
	image := b.CSV.Annotations["containerImage"]
	if manager.Image != image || image == "" {
		t.Errorf("manager image %q, containerImage annotation %q: want equal and set", manager.Image, image)
	}
	if !hasRegistryHost(image) {
		t.Errorf("image %q names no registry host: OLM needs the full name", image)
	}
	// config/default installs the same image (the chart's is checked in chart_test.go).
	var kz struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(root, "config/manager/kustomization.yaml")), &kz); err != nil {
		t.Fatal(err)
	}
	if len(kz.Images) != 1 || kz.Images[0].NewName+":"+kz.Images[0].NewTag != image {
		t.Errorf("config/manager/kustomization.yaml images %+v, want the bundle's %s", kz.Images, image)
	}
	// A catalog mirrored for a disconnected cluster copies relatedImages: the operator and
	// the etcd image a cluster without spec.repository/version runs must be listed.
	related := map[string]string{}
	for _, ri := range b.CSV.Spec.RelatedImages {
		related[ri.Name] = ri.Image
	}
	wantEtcd := etcdv1beta2.DefaultRepository + ":v" + etcdv1beta2.DefaultVersion
	if related["etcd-operator"] != image || related["etcd"] != wantEtcd || len(related) != 2 {
		t.Errorf("relatedImages %v, want etcd-operator=%s and etcd=%s", b.CSV.Spec.RelatedImages, image, wantEtcd)
	}
	watch := envVar(manager.Env, "WATCH_NAMESPACE")
	if watch == nil || watch.ValueFrom == nil || watch.ValueFrom.FieldRef == nil ||
		watch.ValueFrom.FieldRef.FieldPath != "metadata.annotations['olm.targetNamespaces']" {
		t.Errorf("WATCH_NAMESPACE = %+v, want it from the olm.targetNamespaces annotation", watch)
	}

	// The rest of the pod is config/manager's, unchanged.
	cfg := configManager(t)
	cfgC := cfg.Spec.Template.Spec.Containers[0]
	// Except that, with a conversion webhook, OLM provides the serving certificate
	// (TestConversionWebhookWiring checks the flag).
	wantArgs := cfgC.Args
	if len(b.CSV.Spec.WebhookDefinitions) > 0 {
		wantArgs = nil
		for _, a := range cfgC.Args {
			if !strings.HasPrefix(a, bundlegen.WebhookCertsFlag+"=") {
				wantArgs = append(wantArgs, a)
			}
		}
		wantArgs = append(wantArgs, bundlegen.WebhookCertsFlag+"="+bundlegen.WebhookCertsProvided)
	}
	if !reflect.DeepEqual(manager.Command, cfgC.Command) || !reflect.DeepEqual(manager.Args, wantArgs) ||
		!reflect.DeepEqual(manager.Resources, cfgC.Resources) || !reflect.DeepEqual(manager.LivenessProbe, cfgC.LivenessProbe) {
		t.Errorf("manager container differs from config/manager/manager.yaml")
	}
	if envVar(manager.Env, "POD_NAMESPACE") == nil {
		t.Error("POD_NAMESPACE is missing")
	}
	if e := envVar(manager.Env, "MEMORY_LIMIT"); !memoryLimitFromDownwardAPI(e) || !memoryLimitFromDownwardAPI(envVar(cfgC.Env, "MEMORY_LIMIT")) {
		t.Errorf("MEMORY_LIMIT = %+v, want it from the downward API's limits.memory, as config/manager passes it", e)
	}
	if !reflect.DeepEqual(dep.Spec.Selector, cfg.Spec.Selector) {
		t.Errorf("selector %v, want %v", dep.Spec.Selector, cfg.Spec.Selector)
	}
}

// memoryLimitFromDownwardAPI: e passes the container's memory limit in bytes (the
// default divisor), from which main sets Go's soft memory limit.
func memoryLimitFromDownwardAPI(e *corev1.EnvVar) bool {
	if e == nil || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil {
		return false
	}
	r := e.ValueFrom.ResourceFieldRef
	return r.Resource == "limits.memory" && (r.Divisor.IsZero() || r.Divisor.Value() == 1)
}

func envVar(env []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			return &env[i]
		}
	}
	return nil
}

// TestExamplesCoverEveryKind checks alm-examples, taken from config/samples, holds an
// example of every owned kind, at most one per version, each of an owned version, and
// names no image from a registry host. (A served version without its own example only
// draws a validator warning: the catalog then shows another version's.)
func TestExamplesCoverEveryKind(t *testing.T) {
	b := loadCommitted(t)
	var examples []map[string]any
	if err := json.Unmarshal([]byte(b.CSV.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	byGVK := map[string]int{}
	kinds := map[string]int{}
	for _, ex := range examples {
		byGVK[fmt.Sprint(ex["apiVersion"], ", ", ex["kind"])]++
		kinds[fmt.Sprint(ex["kind"])]++
	}
	owned := map[string]bool{}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		_, group, _ := strings.Cut(d.Name, ".")
		owned[group+"/"+d.Version+", "+d.Kind] = true
		if kinds[d.Kind] == 0 {
			t.Errorf("alm-examples has no %s", d.Kind)
		}
	}
	for gvk, n := range byGVK {
		if !owned[gvk] || n != 1 {
			t.Errorf("alm-examples has %d examples of %s; want at most one, of an owned kind and version", n, gvk)
		}
	}
	for _, ex := range examples {
		walkStrings(ex, "", func(key, v string) {
			if (key == "repository" || strings.HasSuffix(strings.ToLower(key), "image")) && hasRegistryHost(v) {
				t.Errorf("alm-example %s names an image on a registry host: %s=%q", ex["kind"], key, v)
			}
		})
	}
}

// walkStrings calls fn with the key and value of every string in a decoded JSON value.
func walkStrings(v any, key string, fn func(key, v string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			walkStrings(c, k, fn)
		}
	case []any:
		for _, c := range t {
			walkStrings(c, key, fn)
		}
	case string:
		fn(key, t)
	}
}

// TestDockerfileMatchesAnnotations checks each bundle image label equals the
// metadata/annotations.yaml entry of the same key, and that the COPY lines ship the
// manifests and metadata directories to the image root.
func TestDockerfileMatchesAnnotations(t *testing.T) {
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(bundleDir, "metadata/annotations.yaml")), &ann); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{}
	var copies []string
	for _, line := range strings.Split(string(readFile(t, filepath.Join(root, "bundle.Dockerfile"))), "\n") {
		if kv, ok := strings.CutPrefix(line, "LABEL "); ok {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = v
		}
		if c, ok := strings.CutPrefix(line, "COPY "); ok {
			copies = append(copies, c)
		}
	}
	if !reflect.DeepEqual(labels, ann.Annotations) {
		t.Errorf("Dockerfile labels %v differ from annotations.yaml %v", labels, ann.Annotations)
	}
	for k, want := range map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
		"operators.operatorframework.io.bundle.package.v1":   "etcd-operator",
	} {
		if ann.Annotations[k] != want {
			t.Errorf("annotation %s = %q, want %q", k, ann.Annotations[k], want)
		}
	}
	want := []string{"bundle/manifests /manifests/", "bundle/metadata /metadata/"}
	if !reflect.DeepEqual(copies, want) {
		t.Errorf("COPY lines %q, want %q", copies, want)
	}
}

// treeFiles reads every file under base/sub, keyed by slash path relative to base.
func treeFiles(t *testing.T, base, sub string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(filepath.Join(base, sub), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compareTrees reports files missing, extra or different, with the first differing line.
func compareTrees(t *testing.T, got, want map[string][]byte, fix string) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		g, inGot := got[n]
		w, inWant := want[n]
		switch {
		case !inGot:
			t.Errorf("%s is missing; run %s", n, fix)
		case !inWant:
			t.Errorf("%s should not exist; run %s", n, fix)
		case !bytes.Equal(g, w):
			t.Errorf("%s is stale (%s); run %s", n, firstDiff(g, w), fix)
		}
	}
}

func firstDiff(got, want []byte) string {
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Sprintf("line %d: have %q, want %q", i+1, g, w)
		}
	}
	return "identical lines"
}
