package olm

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
)

// releasedDir holds the bundles of released versions, unchanged since their release:
// what catalogs serve and what the next version upgrades from.
const releasedDir = root + "/hack/bundle/released"

// TestReleasedBundlesValidate runs OLM's validators on every released bundle, and
// checks each is filed under its own version.
func TestReleasedBundlesValidate(t *testing.T) {
	versions := releasedVersions(t)
	if len(versions) == 0 {
		t.Fatalf("no released bundles in %s", releasedDir)
	}
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			b := validateBundle(t, filepath.Join(releasedDir, v))
			if b.CSV.Name != bundlegen.CSVName(v) || b.CSV.Spec.Version.String() != v {
				t.Errorf("released/%s holds CSV %s version %s", v, b.CSV.Name, b.CSV.Spec.Version)
			}
		})
	}
}

// TestUpgradeChain checks the committed bundle/ upgrades from the newest released
// bundle the way OLM resolves it: spec.replaces names that bundle's exact CSV name, the
// version increases, the two share a channel (OLM follows replaces edges within a
// channel), and every version objects may be stored in under the released CRDs stays in
// the new CRDs (TestCRDUpgradeOnAPIServer does the same on a real API server). It also
// requires the Makefile's PREV_VERSION (derived from hack/bundle/released) to be that
// released version, so `make bundle` regenerates the same edge.
func TestUpgradeChain(t *testing.T) {
	versions := releasedVersions(t)
	if len(versions) == 0 {
		t.Fatalf("no released bundles in %s", releasedDir)
	}
	prev := versions[len(versions)-1]
	old := validateBundle(t, filepath.Join(releasedDir, prev))
	cur := loadCommitted(t)

	if cur.CSV.Spec.Replaces != old.CSV.Name {
		t.Errorf("bundle/ replaces %q, want the newest released CSV %q", cur.CSV.Spec.Replaces, old.CSV.Name)
	}
	if !old.CSV.Spec.Version.LT(cur.CSV.Spec.Version.Version) {
		t.Errorf("bundle/ version %s is not newer than released %s", cur.CSV.Spec.Version, old.CSV.Spec.Version)
	}
	shared := false
	for _, c := range cur.Channels {
		shared = shared || slices.Contains(old.Channels, c)
	}
	if !shared {
		t.Errorf("bundle/ channels %q share none with released %s's %q: no upgrade edge", cur.Channels, prev, old.Channels)
	}
	if got := makeValue(t, "PREV_VERSION"); got != prev {
		t.Errorf("the Makefile's PREV_VERSION is %q, want the newest released version %q", got, prev)
	}
	if got := makeDefault(t, "VERSION"); got != cur.CSV.Spec.Version.String() {
		t.Errorf("Makefile VERSION ?= %q, bundle/ is %s", got, cur.CSV.Spec.Version)
	}

	next := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range cur.V1CRDs {
		next[c.Name] = c
	}
	for _, c := range old.V1CRDs {
		n, ok := next[c.Name]
		if !ok {
			t.Errorf("bundle/ drops CRD %s, which released %s installs: OLM would leave it and its objects orphaned", c.Name, prev)
			continue
		}
		installed := c.DeepCopy()
		installed.Status.StoredVersions = bundlegen.StorageVersions(c)
		if err := bundlegen.CheckStoredVersions(installed, n); err != nil {
			t.Error(err)
		}
	}
}

// TestUpgradeFromReleasedWithOptions generates a bundle with every option the generator
// has (skip range, several channels, a default) replacing the released one, as a
// release with a new channel would, and validates it.
func TestUpgradeFromReleasedWithOptions(t *testing.T) {
	prev := releasedVersions(t)
	o := bundlegen.Options{
		Root: root, Version: "9.0.0", Replaces: bundlegen.CSVName(prev[len(prev)-1]), SkipRange: ">=0.1.0 <9.0.0",
		Channels: []string{"alpha", "stable"}, DefaultChannel: "stable", Image: "example.com/etcd-operator:v9.0.0",
	}
	dir := t.TempDir()
	if err := bundlegen.Write(o, dir, ""); err != nil {
		t.Fatal(err)
	}
	b := validateBundle(t, dir)
	if b.CSV.Spec.Replaces != o.Replaces || b.CSV.Annotations["olm.skipRange"] != o.SkipRange {
		t.Errorf("replaces %q skipRange %q", b.CSV.Spec.Replaces, b.CSV.Annotations["olm.skipRange"])
	}
	if b.DefaultChannel != "stable" || !slices.Contains(b.Channels, "alpha") {
		t.Errorf("channels %q default %q: want alpha kept (the upgrade edge) and stable default", b.Channels, b.DefaultChannel)
	}
	if img := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Image; img != o.Image {
		t.Errorf("runs image %q", img)
	}
}

// releasedVersions lists hack/bundle/released's versions, oldest first.
func releasedVersions(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(releasedDir)
	if err != nil {
		t.Fatal(err)
	}
	var vs []semver.Version
	for _, e := range entries {
		v, err := semver.Parse(e.Name())
		if err != nil || !e.IsDir() {
			t.Errorf("%s/%s is not a version directory", releasedDir, e.Name())
			continue
		}
		vs = append(vs, v)
	}
	semver.Sort(vs)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

// makeValue is the value make gives a variable when run without arguments, in an
// environment that does not set it.
func makeValue(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command("make", "-s", "--no-print-directory", "-C", root,
		"--eval", "print-value: ; @echo \"[$("+name+")]\"", "print-value")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, name+"=") || strings.HasPrefix(e, "MAKEFLAGS=")
	})
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make print %s: %v", name, err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(out)), "["), "]")
}

// makeDefault returns the default (`NAME ?= value`) the Makefile gives a variable.
func makeDefault(t *testing.T, name string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*\?=[ \t]*(\S*)[ \t]*$`)
	m := re.FindSubmatch(readFile(t, filepath.Join(root, "Makefile")))
	if m == nil {
		t.Fatalf("Makefile sets no default for %s", name)
	}
	return string(m[1])
}

// TestRegenerateReplacesOldCSV regenerates a newer version into the same directory, as
// `make bundle VERSION=0.2.0` does to bundle/: the old CSV must not linger, or the
// directory would hold two CSVs and stop being a bundle.
func TestRegenerateReplacesOldCSV(t *testing.T) {
	dir := t.TempDir()
	out, dockerfile := filepath.Join(dir, "bundle"), filepath.Join(dir, "bundle.Dockerfile")
	for _, o := range []bundlegen.Options{
		{Root: root, Version: "0.1.0", Channels: []string{"alpha"}, Image: "example.com/etcd-operator:v0.1.0"},
		{Root: root, Version: "0.2.0", Replaces: "etcd-operator.v0.1.0", Channels: []string{"alpha"}, Image: "example.com/etcd-operator:v0.2.0"},
	} {
		if err := bundlegen.Write(o, out, dockerfile); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(out, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	var csvs []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".clusterserviceversion.yaml") {
			csvs = append(csvs, e.Name())
		}
	}
	if len(csvs) != 1 || csvs[0] != bundlegen.CSVFileName("0.2.0") {
		t.Errorf("CSVs after regenerating: %q, want only %s", csvs, bundlegen.CSVFileName("0.2.0"))
	}
	if b := validateBundle(t, out); b.CSV.Spec.Replaces != "etcd-operator.v0.1.0" {
		t.Errorf("replaces %q", b.CSV.Spec.Replaces)
	}

	// The Dockerfile's directory is the build context, so the bundle must be inside it.
	o := bundlegen.Options{Root: root, Version: "0.1.0", Channels: []string{"alpha"}, Image: "example.com/etcd-operator:v0.1.0"}
	err = bundlegen.Write(o, out, filepath.Join(dir, "sub", "bundle.Dockerfile"))
	if err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("Dockerfile beside no bundle: err %v, want a refusal", err)
	}
}

// TestOptionsAreChecked: bad options are refused with a message naming the problem,
// rather than producing a bundle OLM would reject or an image nobody can pull.
func TestOptionsAreChecked(t *testing.T) {
	good := bundlegen.Options{Root: root, Version: "0.2.0", Replaces: "etcd-operator.v0.1.0", Channels: []string{"alpha"}, Image: "example.com/etcd-operator:v0.2.0"}
	if err := good.Validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for name, tc := range map[string]struct {
		edit func(*bundlegen.Options)
		want string
	}{
		"leading v":           {func(o *bundlegen.Options) { o.Version = "v0.2.0" }, "not semver"},
		"not semver":          {func(o *bundlegen.Options) { o.Version = "0.2" }, "not semver"},
		"replaces newer":      {func(o *bundlegen.Options) { o.Replaces = "etcd-operator.v0.3.0" }, "not older"},
		"replaces same":       {func(o *bundlegen.Options) { o.Replaces = "etcd-operator.v0.2.0" }, "not older"},
		"replaces other pkg":  {func(o *bundlegen.Options) { o.Replaces = "other.v0.1.0" }, "CSV name"},
		"no channel":          {func(o *bundlegen.Options) { o.Channels = nil }, "channel"},
		"comma in channel":    {func(o *bundlegen.Options) { o.Channels = []string{"a,b"} }, "comma"},
		"unknown default":     {func(o *bundlegen.Options) { o.DefaultChannel = "stable" }, "default channel"},
		"no image":            {func(o *bundlegen.Options) { o.Image = "" }, "image"},
		"bare name":           {func(o *bundlegen.Options) { o.Image = "etcd-operator:v0.2.0" }, "no registry host"},
		"path without host":   {func(o *bundlegen.Options) { o.Image = "team/etcd-operator:v0.2.0" }, "no registry host"},
		"missing config root": {func(o *bundlegen.Options) { o.Root = "" }, "root"},
	} {
		t.Run(name, func(t *testing.T) {
			o := good
			o.Channels = append([]string(nil), good.Channels...)
			tc.edit(&o)
			_, err := bundlegen.Build(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build: err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	// Any registry host is fine: host:port, localhost, a domain.
	for _, img := range []string{"registry.invalid/etcd-operator:v0.2.0", "localhost:5000/etcd-operator:v0.2.0", "localhost/team/etcd-operator:v0.2.0"} {
		o := good
		o.Image = img
		if err := o.Validate(); err != nil {
			t.Errorf("image %s refused: %v", img, err)
		}
	}
}
