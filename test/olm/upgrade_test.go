package olm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
)

// TestUpgradeChain generates 0.1.0 and a 0.2.0 that replaces it, as the next release
// will, validates both with OLM's validators and checks the upgrade edge: OLM upgrades a
// subscription from the CSV named in spec.replaces, which must be the older bundle's
// exact CSV name, in a shared channel.
func TestUpgradeChain(t *testing.T) {
	v1 := bundlegen.Options{Root: root, Version: "0.1.0", Channels: []string{"alpha"}, Image: "etcd-operator:v0.1.0"}
	v2 := bundlegen.Options{
		Root: root, Version: "0.2.0", Replaces: bundlegen.CSVName("0.1.0"), SkipRange: ">=0.1.0 <0.2.0",
		Channels: []string{"alpha", "stable"}, DefaultChannel: "stable", Image: "etcd-operator:v0.2.0",
	}
	dir := t.TempDir()
	b1dir, b2dir := filepath.Join(dir, "0.1.0"), filepath.Join(dir, "0.2.0")
	if err := bundlegen.Write(v1, b1dir, ""); err != nil {
		t.Fatal(err)
	}
	if err := bundlegen.Write(v2, b2dir, ""); err != nil {
		t.Fatal(err)
	}
	b1 := validateBundle(t, b1dir)
	b2 := validateBundle(t, b2dir)

	if b1.CSV.Spec.Replaces != "" {
		t.Errorf("0.1.0 replaces %q, want nothing", b1.CSV.Spec.Replaces)
	}
	if b2.CSV.Spec.Replaces != b1.CSV.Name {
		t.Errorf("0.2.0 replaces %q, want %q", b2.CSV.Spec.Replaces, b1.CSV.Name)
	}
	if !b1.CSV.Spec.Version.LT(b2.CSV.Spec.Version.Version) {
		t.Errorf("versions %s and %s are not increasing", b1.CSV.Spec.Version, b2.CSV.Spec.Version)
	}
	if b2.CSV.Annotations["olm.skipRange"] != ">=0.1.0 <0.2.0" {
		t.Errorf("olm.skipRange %q", b2.CSV.Annotations["olm.skipRange"])
	}
	if b2.DefaultChannel != "stable" || !contains(b2.Channels, "alpha") {
		t.Errorf("0.2.0 channels %q default %q: want alpha kept (the upgrade edge) and stable default", b2.Channels, b2.DefaultChannel)
	}
	if img := b2.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Image; img != "etcd-operator:v0.2.0" {
		t.Errorf("0.2.0 runs image %q", img)
	}
	// Same CRDs, so the upgrade changes no stored objects.
	if len(b1.V1CRDs) != len(b2.V1CRDs) || len(b1.V1CRDs) == 0 {
		t.Errorf("CRDs: 0.1.0 has %d, 0.2.0 has %d", len(b1.V1CRDs), len(b2.V1CRDs))
	}
}

// TestRegenerateReplacesOldCSV regenerates a newer version into the same directory, as
// `make bundle VERSION=0.2.0` does to bundle/: the old CSV must not linger, or the
// directory would hold two CSVs and stop being a bundle.
func TestRegenerateReplacesOldCSV(t *testing.T) {
	dir := t.TempDir()
	out, dockerfile := filepath.Join(dir, "bundle"), filepath.Join(dir, "bundle.Dockerfile")
	for _, o := range []bundlegen.Options{
		{Root: root, Version: "0.1.0", Channels: []string{"alpha"}, Image: "etcd-operator:v0.1.0"},
		{Root: root, Version: "0.2.0", Replaces: "etcd-operator.v0.1.0", Channels: []string{"alpha"}, Image: "etcd-operator:v0.2.0"},
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
	o := bundlegen.Options{Root: root, Version: "0.1.0", Channels: []string{"alpha"}, Image: "etcd-operator:v0.1.0"}
	err = bundlegen.Write(o, out, filepath.Join(dir, "sub", "bundle.Dockerfile"))
	if err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("Dockerfile beside no bundle: err %v, want a refusal", err)
	}
}

// TestOptionsAreChecked: bad options are refused with a message naming the problem,
// rather than producing a bundle OLM would reject or an image nobody can pull.
func TestOptionsAreChecked(t *testing.T) {
	good := bundlegen.Options{Root: root, Version: "0.2.0", Replaces: "etcd-operator.v0.1.0", Channels: []string{"alpha"}, Image: "etcd-operator:v0.2.0"}
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
		"registry host":       {func(o *bundlegen.Options) { o.Image = "registry.invalid/etcd-operator:v0.2.0" }, "registry host"},
		"registry host:port":  {func(o *bundlegen.Options) { o.Image = "localhost:5000/etcd-operator:v0.2.0" }, "registry host"},
		"registry localhost":  {func(o *bundlegen.Options) { o.Image = "localhost/etcd-operator:v0.2.0" }, "registry host"},
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
	// Publishing to one's own registry needs the host, explicitly allowed.
	o := good
	o.Image = "registry.invalid/etcd-operator:v0.2.0"
	o.AllowRegistryHost = true
	if err := o.Validate(); err != nil {
		t.Errorf("registry host refused although allowed: %v", err)
	}
	// An image with a path but no host is fine.
	o = good
	o.Image = "team/etcd-operator:v0.2.0"
	if err := o.Validate(); err != nil {
		t.Errorf("image without a registry host refused: %v", err)
	}
}
