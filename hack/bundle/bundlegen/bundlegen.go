// Package bundlegen builds the operator's OLM bundle (registry+v1 format) and syncs the
// generated inputs of the install Helm chart, from the kustomize sources in config/.
//
// It is the code behind `go run ./hack/bundle` (make bundle). It lives in its own package
// so test/olm can generate into a temporary directory and compare the result with the
// committed bundle/, which is how a stale bundle is caught. Output depends only on the
// input files and Options: there are no timestamps, and every map is written with sorted
// keys, so the same inputs give byte-identical files.
//
// The CRDs are config/crd/kustomization.yaml's output (see CRDs), so the bundle and the
// chart ship the conversion stanza its patches add. The CRDs' clientConfig is kept in
// the bundle although OLM replaces it with its own Service and CA: it is what the other
// installs use, one copy of the CRDs serves all three, and OLM's validators accept it.
// When a CRD converts through a webhook, the CSV gets what OLM needs to serve it (see
// conversionWebhook): a ConversionWebhook in spec.webhookdefinitions, AllNamespaces as
// the only supported install mode, and --webhook-certs=provided for the operator, since
// OLM issues and mounts the serving certificate.
package bundlegen

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// PackageName is the OLM package (and CSV name prefix) of the operator.
const PackageName = "etcd-operator"

// Builder is recorded in the bundle metadata and CSV in place of an operator-sdk version.
const Builder = "etcd-operator-hack-bundle"

// Paths of the inputs, relative to the repository root.
const (
	CSVTemplatePath      = "config/manifests/bases/etcd-operator.clusterserviceversion.yaml"
	IconPath             = "config/manifests/icon.svg"
	CRDDir               = "config/crd/bases"
	ManagerPath          = "config/manager/manager.yaml"
	ClusterRolePath      = "config/rbac/role.yaml"
	LeaderElectionPath   = "config/rbac/leader_election_role.yaml"
	DefaultKustomization = "config/default/kustomization.yaml"
	NetworkPolicyPath    = "config/manager/network_policy.yaml"
	SamplesDir           = "config/samples"
	// SamplesGlob selects the samples that become alm-examples: one per kind, named
	// etcd_<version>_<kind>.yaml. Other files there (coreos_*.yaml) are compatibility
	// fixtures that name third-party images, which a catalog listing should not suggest.
	SamplesGlob = "etcd_*.yaml"
)

// ManagerContainer is the container in config/manager whose image --image replaces.
const ManagerContainer = "manager"

// Options says which bundle to build.
type Options struct {
	// Root is the repository root the config/ inputs are read from.
	Root string
	// Version is the operator version, semver without a leading "v" (e.g. 0.1.0).
	Version string
	// Replaces is the CSV name this version upgrades from (e.g. etcd-operator.v0.1.0), or "".
	Replaces string
	// SkipRange, if set, becomes the olm.skipRange annotation (e.g. ">=0.1.0 <0.2.0").
	SkipRange string
	// Channels the bundle is published in, and the package's default channel.
	Channels       []string
	DefaultChannel string
	// Image is the operator image the CSV's Deployment runs, with its registry host
	// (make's $(IMG)): OLM pulls it on clusters whose runtime may default bare names to
	// any registry, and mirroring a catalog rewrites images by registry.
	Image string
}

// File is one generated file; Path is relative to the bundle directory (or, for
// Dockerfile, to the directory holding the bundle directory).
type File struct {
	Path string
	Data []byte
}

// Validate reports the first problem with the options.
func (o Options) Validate() error {
	if o.Root == "" {
		return errors.New("root is required")
	}
	v, err := semver.Parse(o.Version)
	if err != nil {
		return fmt.Errorf("version %q is not semver (e.g. 0.1.0, no leading v): %w", o.Version, err)
	}
	if o.Replaces != "" {
		rv, ok := strings.CutPrefix(o.Replaces, PackageName+".v")
		if !ok {
			return fmt.Errorf("replaces %q must be a CSV name %s.v<semver>", o.Replaces, PackageName)
		}
		r, err := semver.Parse(rv)
		if err != nil {
			return fmt.Errorf("replaces %q: %w", o.Replaces, err)
		}
		if !r.LT(v) {
			return fmt.Errorf("replaces %q is not older than version %s", o.Replaces, o.Version)
		}
	}
	if len(o.Channels) == 0 {
		return errors.New("at least one channel is required")
	}
	for _, c := range o.Channels {
		if c == "" || strings.ContainsAny(c, ", ") {
			return fmt.Errorf("channel %q is empty or contains a comma or space", c)
		}
	}
	if o.DefaultChannel != "" && !contains(o.Channels, o.DefaultChannel) {
		return fmt.Errorf("default channel %q is not one of the channels %v", o.DefaultChannel, o.Channels)
	}
	if o.Image == "" {
		return errors.New("image is required")
	}
	if !hasRegistryHost(o.Image) {
		return fmt.Errorf("image %q names no registry host; a bundle needs the full name, e.g. <registry>/etcd-operator:v%s", o.Image, o.Version)
	}
	return nil
}

// hasRegistryHost reports whether an image reference starts with a registry host: a first
// path component containing "." or ":" or equal to "localhost" (the rule docker uses).
func hasRegistryHost(image string) bool {
	first, _, ok := strings.Cut(image, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// relatedImages lists every image the operator runs without a user naming it, so that
// mirroring a catalog for a disconnected cluster copies them: the operator itself (its
// pod, and the restore and recovery init containers of member pods) and etcd at the
// version and repository a cluster gets when its spec names none.
func relatedImages(operator string) []v1alpha1.RelatedImage {
	return []v1alpha1.RelatedImage{
		{Name: "etcd-operator", Image: operator},
		{Name: "etcd", Image: v1beta2.DefaultRepository + ":v" + v1beta2.DefaultVersion},
	}
}

// CSVName is the ClusterServiceVersion name for a version.
func CSVName(v string) string { return PackageName + ".v" + v }

// CSVFileName is the CSV's file name inside manifests/.
func CSVFileName(v string) string { return CSVName(v) + ".clusterserviceversion.yaml" }

// Build returns the bundle's files: manifests/<csv>, manifests/<crd files>,
// metadata/annotations.yaml, in a fixed order.
func Build(o Options) ([]File, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	in, err := readInputs(o.Root)
	if err != nil {
		return nil, err
	}
	csv, err := buildCSV(o, in)
	if err != nil {
		return nil, err
	}
	csvYAML, err := marshalObject(csv, "status")
	if err != nil {
		return nil, err
	}
	files := []File{{Path: path.Join("manifests", CSVFileName(o.Version)), Data: csvYAML}}
	for _, c := range in.crds {
		files = append(files, File{Path: path.Join("manifests", c.file), Data: c.raw})
	}
	np, err := networkPolicy(in)
	if err != nil {
		return nil, err
	}
	files = append(files, np)
	ann, err := yaml.Marshal(map[string]any{"annotations": Annotations(o)})
	if err != nil {
		return nil, err
	}
	files = append(files, File{Path: "metadata/annotations.yaml", Data: ann})
	return files, nil
}

// networkPolicy is config/manager's NetworkPolicy as a bundle manifest: named as
// kustomize names it, without a namespace (OLM creates it in the operator's).
func networkPolicy(in *inputs) (File, error) {
	np := in.networkPolicy.DeepCopy()
	np.APIVersion, np.Kind = "networking.k8s.io/v1", "NetworkPolicy"
	np.Name, np.Namespace = in.namePrefix+np.Name, ""
	raw, err := marshalObject(np, "status")
	if err != nil {
		return File{}, err
	}
	return File{Path: path.Join("manifests", np.Name+"_networking.k8s.io_v1_networkpolicy.yaml"), Data: raw}, nil
}

// Annotations are the bundle's metadata/annotations.yaml entries, which bundle.Dockerfile
// repeats as image labels.
func Annotations(o Options) map[string]string {
	def := o.DefaultChannel
	if def == "" {
		def = o.Channels[0]
	}
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         PackageName,
		"operators.operatorframework.io.bundle.channels.v1":        strings.Join(o.Channels, ","),
		"operators.operatorframework.io.bundle.channel.default.v1": def,
		"operators.operatorframework.io.metrics.builder":           Builder,
		"operators.operatorframework.io.metrics.mediatype.v1":      "metrics+v1",
	}
}

// Dockerfile is the bundle image's Dockerfile. bundleDir is the bundle directory relative
// to the build context (the Dockerfile's directory), e.g. "bundle".
func Dockerfile(o Options, bundleDir string) []byte {
	ann := Annotations(o)
	var b bytes.Buffer
	b.WriteString("# Generated by `make bundle` (go run ./hack/bundle); do not edit.\n")
	b.WriteString("# The labels repeat " + path.Join(bundleDir, "metadata/annotations.yaml") + ": OLM reads either.\n")
	b.WriteString("FROM scratch\n\n")
	for _, k := range sortedKeys(ann) {
		fmt.Fprintf(&b, "LABEL %s=%s\n", k, ann[k])
	}
	fmt.Fprintf(&b, "\nCOPY %s /manifests/\n", path.Join(bundleDir, "manifests"))
	fmt.Fprintf(&b, "COPY %s /metadata/\n", path.Join(bundleDir, "metadata"))
	return b.Bytes()
}

// Write generates the bundle into outDir, replacing whatever manifests/ and metadata/
// held (so a CSV of a previous version does not linger), and, if dockerfile is not "",
// writes the bundle Dockerfile there with paths relative to its directory.
func Write(o Options, outDir, dockerfile string) error {
	files, err := Build(o)
	if err != nil {
		return err
	}
	for _, sub := range []string{"manifests", "metadata"} {
		if err := os.RemoveAll(filepath.Join(outDir, sub)); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(outDir, filepath.FromSlash(f.Path)), f.Data); err != nil {
			return err
		}
	}
	if dockerfile == "" {
		return nil
	}
	rel, err := filepath.Rel(filepath.Dir(dockerfile), outDir)
	if err != nil {
		return err
	}
	if strings.HasPrefix(rel, "..") {
		return fmt.Errorf("bundle directory %s is outside the Dockerfile's build context %s", outDir, filepath.Dir(dockerfile))
	}
	return writeFile(dockerfile, Dockerfile(o, filepath.ToSlash(rel)))
}

func writeFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// inputs are the parsed config/ files.
type inputs struct {
	template    *v1alpha1.ClusterServiceVersion
	icon        []byte
	crds        []crdFile
	deployment  *appsv1.Deployment
	clusterRole *rbacv1.ClusterRole
	// namespacedRole is the manager's Role in its own namespace (controller-gen's
	// namespace= markers: the restore-pin key Secret).
	namespacedRole *rbacv1.Role
	leaderElection *rbacv1.Role
	// networkPolicy is the operator pod's NetworkPolicy, which the bundle ships as a
	// manifest of its own (OLM v0.36, the bench's, lists NetworkPolicy among the kinds
	// a bundle may ship: its catalog operator's supportedresources.go).
	networkPolicy *networkingv1.NetworkPolicy
	namePrefix    string
	samples       []map[string]any
}

type crdFile struct {
	file string
	raw  []byte
	crd  *apiextensionsv1.CustomResourceDefinition
}

func readInputs(root string) (*inputs, error) {
	in := &inputs{}
	read := func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(root, filepath.FromSlash(rel))) }

	raw, err := read(CSVTemplatePath)
	if err != nil {
		return nil, err
	}
	in.template = &v1alpha1.ClusterServiceVersion{}
	// Strict: a misspelt field in the hand-written template is an error, not a silent drop.
	if err := yaml.UnmarshalStrict(raw, in.template); err != nil {
		return nil, fmt.Errorf("%s: %w", CSVTemplatePath, err)
	}
	if in.icon, err = read(IconPath); err != nil {
		return nil, err
	}

	if in.crds, err = readCRDs(root); err != nil {
		return nil, err
	}

	if raw, err = read(ManagerPath); err != nil {
		return nil, err
	}
	in.deployment = &appsv1.Deployment{}
	if err := decodeOnly(raw, in.deployment, "Deployment"); err != nil {
		return nil, fmt.Errorf("%s: %w", ManagerPath, err)
	}
	if raw, err = read(ClusterRolePath); err != nil {
		return nil, err
	}
	in.clusterRole = &rbacv1.ClusterRole{}
	if err := decodeOnly(raw, in.clusterRole, "ClusterRole"); err != nil {
		return nil, fmt.Errorf("%s: %w", ClusterRolePath, err)
	}
	in.namespacedRole = &rbacv1.Role{}
	if err := decodeOnly(raw, in.namespacedRole, "Role"); err != nil {
		return nil, fmt.Errorf("%s: %w", ClusterRolePath, err)
	}
	if raw, err = read(LeaderElectionPath); err != nil {
		return nil, err
	}
	in.leaderElection = &rbacv1.Role{}
	if err := decodeOnly(raw, in.leaderElection, "Role"); err != nil {
		return nil, fmt.Errorf("%s: %w", LeaderElectionPath, err)
	}

	if raw, err = read(NetworkPolicyPath); err != nil {
		return nil, err
	}
	in.networkPolicy = &networkingv1.NetworkPolicy{}
	if err := decodeOnly(raw, in.networkPolicy, "NetworkPolicy"); err != nil {
		return nil, fmt.Errorf("%s: %w", NetworkPolicyPath, err)
	}

	if raw, err = read(DefaultKustomization); err != nil {
		return nil, err
	}
	var k struct {
		NamePrefix string `json:"namePrefix"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return nil, fmt.Errorf("%s: %w", DefaultKustomization, err)
	}
	in.namePrefix = k.NamePrefix

	samplePaths, err := filepath.Glob(filepath.Join(root, SamplesDir, SamplesGlob))
	if err != nil {
		return nil, err
	}
	sort.Strings(samplePaths)
	for _, p := range samplePaths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		in.samples = append(in.samples, obj)
	}
	return in, nil
}

// decodeOnly decodes the one document of the given kind in a multi-document YAML file.
func decodeOnly(raw []byte, into any, kind string) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	found := 0
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		if meta.Kind != kind {
			continue
		}
		found++
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			return err
		}
	}
	if found != 1 {
		return fmt.Errorf("want exactly one %s, found %d", kind, found)
	}
	return nil
}

func buildCSV(o Options, in *inputs) (*v1alpha1.ClusterServiceVersion, error) {
	csv := in.template.DeepCopy()
	csv.Name = CSVName(o.Version)
	csv.Namespace = ""
	csv.Spec.Version = version.OperatorVersion{Version: semver.MustParse(o.Version)}
	csv.Spec.Replaces = o.Replaces
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations["containerImage"] = o.Image
	csv.Spec.RelatedImages = relatedImages(o.Image)
	if o.SkipRange != "" {
		csv.Annotations["olm.skipRange"] = o.SkipRange
	}
	if len(in.samples) > 0 {
		ex, err := json.MarshalIndent(in.samples, "", "  ")
		if err != nil {
			return nil, err
		}
		csv.Annotations["alm-examples"] = string(ex)
	}
	if len(csv.Spec.Icon) == 0 {
		csv.Spec.Icon = []v1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(in.icon), MediaType: "image/svg+xml"}}
	}

	owned, err := ownedCRDs(csv.Spec.CustomResourceDefinitions.Owned, in.crds)
	if err != nil {
		return nil, err
	}
	csv.Spec.CustomResourceDefinitions.Owned = owned

	dep, sa, err := deployment(in, o.Image)
	if err != nil {
		return nil, err
	}
	wh, err := conversionWebhook(csv, in.crds, dep)
	if err != nil {
		return nil, err
	}
	clusterRules := in.clusterRole.Rules
	if wh != nil {
		csv.Spec.WebhookDefinitions = append(csv.Spec.WebhookDefinitions, *wh)
		if csv.Spec.InstallModes, err = onlyAllNamespaces(csv.Spec.InstallModes); err != nil {
			return nil, err
		}
		// OLM provides the serving certificate; the operator must not make its own.
		c := managerContainer(dep.Spec.Template.Spec.Containers)
		c.Args = setFlag(c.Args, WebhookCertsFlag, WebhookCertsProvided)
		// OLM mounts that certificate at the certificate directory; a volume the
		// kubectl install keeps there for the self-provisioned one would collide.
		dropMountAt(&dep.Spec.Template.Spec, OLMWebhookCertDir)
		// And OLM injects the CA into the CRDs: the operator needs no access to them.
		clusterRules = WithoutCRDAccess(clusterRules)
	}
	if err := checkConversionWebhooks(csv, in.crds); err != nil {
		return nil, err
	}
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{
		StrategyName: v1alpha1.InstallStrategyNameDeployment,
		StrategySpec: v1alpha1.StrategyDetailsDeployment{
			DeploymentSpecs: []v1alpha1.StrategyDeploymentSpec{dep},
			ClusterPermissions: []v1alpha1.StrategyDeploymentPermissions{{
				ServiceAccountName: sa, Rules: clusterRules,
			}},
			// OLM grants these in the install namespace, where the operator runs: leader
			// election, and the manager's own Role (without it the restore-pin key cannot
			// be read or made, and pins and markers are never trusted under OLM).
			Permissions: []v1alpha1.StrategyDeploymentPermissions{{
				ServiceAccountName: sa, Rules: append(slices.Clone(in.leaderElection.Rules), in.namespacedRole.Rules...),
			}},
		},
	}
	return csv, nil
}

// ownedCRDs returns the template's owned entries, in template order, with the kind taken
// from the CRD. Every served version of every CRD must have an entry with a displayName and
// a description, and every entry must match a served CRD version: a CRD without a
// description is a poor catalog entry, and an entry for a CRD that is not shipped fails
// OLM's validation.
func ownedCRDs(tmpl []v1alpha1.CRDDescription, crds []crdFile) ([]v1alpha1.CRDDescription, error) {
	served := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range crds {
		for _, v := range c.crd.Spec.Versions {
			if v.Served {
				served[c.crd.Name+"/"+v.Name] = c.crd
			}
		}
	}
	var out []v1alpha1.CRDDescription
	var errs []error
	seen := map[string]bool{}
	for _, d := range tmpl {
		key := d.Name + "/" + d.Version
		crd, ok := served[key]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: owned entry %s matches no served CRD version in %s", CSVTemplatePath, key, CRDDir))
			continue
		case seen[key]:
			errs = append(errs, fmt.Errorf("%s: owned entry %s appears twice", CSVTemplatePath, key))
			continue
		}
		seen[key] = true
		if d.Kind != "" && d.Kind != crd.Spec.Names.Kind {
			errs = append(errs, fmt.Errorf("%s: owned %s says kind %s, the CRD says %s", CSVTemplatePath, key, d.Kind, crd.Spec.Names.Kind))
		}
		d.Kind = crd.Spec.Names.Kind
		if d.DisplayName == "" || d.Description == "" {
			errs = append(errs, fmt.Errorf("%s: owned %s needs a displayName and a description", CSVTemplatePath, key))
		}
		out = append(out, d)
	}
	for _, key := range sortedKeys(served) {
		if !seen[key] {
			name, v, _ := strings.Cut(key, "/")
			errs = append(errs, fmt.Errorf("%s has no owned entry for %s version %s: add one with displayName, description and descriptors", CSVTemplatePath, name, v))
		}
	}
	return out, errors.Join(errs...)
}

// checkConversionWebhooks checks the CSV's conversion webhooks against the CRDs, as OLM
// will use them: every CRD converting through a webhook must be listed in a
// ConversionWebhook's conversionCRDs (OLM only wires those), every listed CRD must be
// shipped and convert through a webhook (OLM would otherwise switch its conversion on),
// and only the AllNamespaces install mode may be supported.
func checkConversionWebhooks(csv *v1alpha1.ClusterServiceVersion, crds []crdFile) error {
	declared := map[string]bool{}
	for _, w := range csv.Spec.WebhookDefinitions {
		for _, c := range w.ConversionCRDs {
			declared[c] = true
		}
	}
	var errs []error
	webhook := map[string]bool{}
	for _, c := range crds {
		conv := c.crd.Spec.Conversion
		if conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
			webhook[c.crd.Name] = true
			if !declared[c.crd.Name] {
				errs = append(errs, fmt.Errorf("CRD %s uses a conversion webhook that the CSV's spec.webhookdefinitions (type ConversionWebhook, conversionCRDs) does not declare", c.crd.Name))
			}
		}
	}
	for _, name := range sortedKeys(declared) {
		if !webhook[name] {
			errs = append(errs, fmt.Errorf("the CSV declares a conversion webhook for %s, which is not a shipped CRD with spec.conversion.strategy Webhook", name))
		}
	}
	if len(declared) > 0 {
		for _, m := range csv.Spec.InstallModes {
			if m.Supported != (m.Type == v1alpha1.InstallModeTypeAllNamespaces) {
				errs = append(errs, fmt.Errorf("with conversion webhooks only the AllNamespaces install mode may be supported; %s is supported=%v", m.Type, m.Supported))
			}
		}
	}
	return errors.Join(errs...)
}

// deployment turns config/manager's Deployment into the CSV's install deployment: the
// kustomize name prefix applied (so names match a `kustomize build config/default`
// install), the manager image set, and WATCH_NAMESPACE fed from the OperatorGroup's
// target namespaces, which OLM puts in the olm.targetNamespaces annotation ("" means all
// namespaces, matching the AllNamespaces install mode).
func deployment(in *inputs, image string) (v1alpha1.StrategyDeploymentSpec, string, error) {
	d := in.deployment.DeepCopy()
	spec := d.Spec
	sa := spec.Template.Spec.ServiceAccountName
	if sa == "" {
		return v1alpha1.StrategyDeploymentSpec{}, "", fmt.Errorf("%s: the Deployment names no serviceAccountName", ManagerPath)
	}
	sa = in.namePrefix + sa
	spec.Template.Spec.ServiceAccountName = sa
	found := false
	for i := range spec.Template.Spec.Containers {
		c := &spec.Template.Spec.Containers[i]
		if c.Name != ManagerContainer {
			continue
		}
		found = true
		c.Image = image
		env := c.Env[:0:0]
		for _, e := range c.Env {
			if e.Name != "WATCH_NAMESPACE" {
				env = append(env, e)
			}
		}
		c.Env = append(env, corev1.EnvVar{
			Name: "WATCH_NAMESPACE",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: "metadata.annotations['olm.targetNamespaces']",
			}},
		})
	}
	if !found {
		return v1alpha1.StrategyDeploymentSpec{}, "", fmt.Errorf("%s: no container named %q", ManagerPath, ManagerContainer)
	}
	return v1alpha1.StrategyDeploymentSpec{
		Name:  in.namePrefix + d.Name,
		Spec:  spec,
		Label: d.Labels,
	}, sa, nil
}

// marshalObject writes a Kubernetes object as YAML with sorted keys, leaving out the
// given top-level fields and metadata.creationTimestamp, which typed structs always
// serialise (as empty/null) but which have no place in a manifest.
func marshalObject(obj any, dropTop ...string) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	for _, k := range dropTop {
		delete(m, k)
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	pruneCreationTimestamps(m)
	// The CSV's cleanup stanza is a newer OLM field; its zero value says nothing.
	if spec, ok := m["spec"].(map[string]any); ok {
		if c, ok := spec["cleanup"].(map[string]any); ok && len(c) == 1 && c["enabled"] == false {
			delete(spec, "cleanup")
		}
	}
	return yaml.Marshal(m)
}

// pruneCreationTimestamps removes the null creationTimestamp that embedded ObjectMeta
// (e.g. a pod template's metadata) serialises to.
func pruneCreationTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		for _, c := range t {
			pruneCreationTimestamps(c)
		}
	case []any:
		for _, c := range t {
			pruneCreationTimestamps(c)
		}
	}
}

var chartCRDName = regexp.MustCompile(`^[a-z0-9.]+_[a-z0-9]+\.yaml$`)

// ChartFiles returns the install chart's files that are copies of config/: the CRDs as
// config/crd/kustomization.yaml builds them (crds/, which Helm installs before the
// templates) and the manager ClusterRole
// (files/manager-role.yaml, whose rules the chart's ClusterRole template reads), keyed by
// path relative to the chart directory.
func ChartFiles(root string) ([]File, error) {
	crds, err := CRDs(root)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, c := range crds {
		if !chartCRDName.MatchString(c.Path) {
			return nil, fmt.Errorf("unexpected CRD file name %s", c.Path)
		}
		files = append(files, File{Path: "crds/" + c.Path, Data: c.Data})
	}
	role, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(ClusterRolePath)))
	if err != nil {
		return nil, err
	}
	header := []byte("# Copied from " + ClusterRolePath + " by `make bundle`; do not edit.\n")
	files = append(files, File{Path: "files/manager-role.yaml", Data: append(header, role...)})
	return files, nil
}

// WriteChartFiles replaces the chart's crds/ and files/manager-role.yaml with ChartFiles.
func WriteChartFiles(root, chartDir string) error {
	files, err := ChartFiles(root)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(chartDir, "crds")); err != nil {
		return err
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(chartDir, filepath.FromSlash(f.Path)), f.Data); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
