package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/hack/catalog/olmimage"
	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

const (
	testRepo   = "registry.invalid/etcd-operator"
	testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// TestPackageChartPinsTheReleasedImage packages the repository's install chart as a
// release does and installs nothing: it loads the .tgz back as helm would, renders it
// with default values, and checks that the Deployment runs the released image by
// digest, that the chart's version is the release's, that values.yaml kept its
// comments, and that index.yaml lists the package with its SHA-256.
func TestPackageChartPinsTheReleasedImage(t *testing.T) {
	out := t.TempDir()
	if err := packageChart(filepath.Join("..", "..", "helm-charts", "etcd-operator"), "9.8.7", testRepo, testDigest, out, "", time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(out, "etcd-operator-9.8.7.tgz")
	ch, err := loader.Load(tgz)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "9.8.7" || ch.Metadata.AppVersion != "9.8.7" {
		t.Errorf("packaged chart version %q appVersion %q, want 9.8.7", ch.Metadata.Version, ch.Metadata.AppVersion)
	}
	for _, f := range ch.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		if v := string(f.Data); !strings.Contains(v, "# Replicas elect a leader") {
			t.Errorf("values.yaml lost its comments:\n%s", v)
		} else if !strings.Contains(v, releasedImageComment+"  repository: "+testRepo+"\n") || strings.Contains(v, "placeholder") {
			t.Errorf("values.yaml's image comment is not the released one (the checkout's says example.com is a placeholder):\n%s", v)
		}
	}
	vals, err := chartutil.ToRenderValues(ch, map[string]any{}, chartutil.ReleaseOptions{Name: "etcd-operator", Namespace: "etcd-operator-system", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := yaml.Unmarshal([]byte(files["etcd-operator/templates/deployment.yaml"]), &dep); err != nil {
		t.Fatal(err)
	}
	if cs := dep.Spec.Template.Spec.Containers; len(cs) == 0 || cs[0].Image != testRepo+"@"+testDigest {
		t.Fatalf("the packaged chart's Deployment runs %v, want %s@%s", cs, testRepo, testDigest)
	}

	raw, err := os.ReadFile(filepath.Join(out, "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var idx repoIndex
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	sum, err := fileSHA256(tgz)
	if err != nil {
		t.Fatal(err)
	}
	es := idx.Entries["etcd-operator"]
	if idx.APIVersion != "v1" || len(es) != 1 || es[0].Version != "9.8.7" || es[0].Digest != sum ||
		len(es[0].URLs) != 1 || es[0].URLs[0] != "etcd-operator-9.8.7.tgz" || es[0].Created.IsZero() {
		t.Errorf("index.yaml:\n%s\nwant one etcd-operator 9.8.7 entry at etcd-operator-9.8.7.tgz with digest %s", raw, sum)
	}
}

func TestRepoIndexURL(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.yaml")
	md, _ := loader.LoadDir(filepath.Join("..", "..", "helm-charts", "etcd-operator"))
	if err := writeRepoIndex(p, md.Metadata, "c-1.tgz", "https://charts.invalid/x/", "ab", time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(p)
	if !strings.Contains(string(raw), "- https://charts.invalid/x/c-1.tgz\n") {
		t.Errorf("index.yaml does not list the package under the base URL:\n%s", raw)
	}
}

// TestPackageChartRefusesAValuesFileItCannotPin: a values.yaml whose image block has
// no digest line is an error, not a chart that silently runs the placeholder image.
func TestPackageChartRefusesAValuesFileItCannotPin(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
	write("values.yaml", "image:\n  repository: x/y\n  tag: \"\"\n")
	err := packageChart(dir, "1.0.0", testRepo, testDigest, t.TempDir(), "", time.Unix(1700000000, 0))
	if err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("err %v, want the missing digest named", err)
	}
}

// writeChecksums runs WriteChecksums on dir and returns the file it wrote.
func writeChecksums(t *testing.T, dir string) []byte {
	t.Helper()
	if err := WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestChecksums: SHA256SUMS lists every file but itself in sha256sum's format, sorted,
// and verifying it catches a changed file and a missing one.
func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"b.txt": "b\n", "images/blobs/sha256/x": "x", "a.yaml": "a: 1\n"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw := writeChecksums(t, dir)
	// sha256 of "b\n" as `printf 'b\n' | sha256sum` prints it.
	want := "0263829989b6fd954f72baaf2fc64bc2e2f01d692d4de72986ea808f6e99813f  b.txt\n"
	lines := strings.SplitAfter(string(raw), "\n")
	if len(lines) != 4 || lines[1] != want || !strings.HasSuffix(lines[0], "  a.yaml\n") || !strings.HasSuffix(lines[2], "  images/blobs/sha256/x\n") {
		t.Fatalf("%s:\n%s", ChecksumsFile, raw)
	}
	if err := VerifyChecksums(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := VerifyChecksums(dir); err == nil || !strings.Contains(err.Error(), "[a.yaml b.txt]") {
		t.Fatalf("verify after a change and a removal: %v", err)
	}
}

// makeDefault is the default (`NAME ?= value`) the repository's Makefile gives name.
func makeDefault(t *testing.T, name string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "?="); ok && strings.TrimSpace(k) == name {
			return strings.Fields(v)
		}
	}
	t.Fatalf("the Makefile sets no default for %s", name)
	return nil
}

// TestDefaultPlatforms: a release made with the Makefile's defaults has the operator for
// both Linux machines (the index a node of either pulls) and the plugin for Linux and
// macOS on both. TestReleaseArtifacts narrows the plugin's list to its own machine, so
// this is what keeps the default whole.
func TestDefaultPlatforms(t *testing.T) {
	for _, c := range []struct {
		name string
		want []string
	}{
		{"RELEASE_PLATFORMS", []string{"linux/amd64", "linux/arm64"}},
		{"PLUGIN_PLATFORMS", []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}},
	} {
		got := makeDefault(t, c.name)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("Makefile %s ?= %v, want %v", c.name, got, c.want)
		}
	}
}

// TestChecksumsCoverThePlugins: with a binary for each default plugin platform built, the
// plugin check passes and SHA256SUMS lists every one of them; a platform built but not
// named, or named but not built, fails the check and names the binary.
func TestChecksumsCoverThePlugins(t *testing.T) {
	platforms := strings.Join(makeDefault(t, "PLUGIN_PLATFORMS"), " ")
	dir := t.TempDir()
	var want []string
	for _, p := range strings.Fields(platforms) {
		f := "kubectl-etcd-" + strings.ReplaceAll(p, "/", "-")
		want = append(want, f)
		if err := os.WriteFile(filepath.Join(dir, f), []byte(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "install.yaml"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkPlugins(dir, platforms); err != nil {
		t.Fatal(err)
	}
	raw := writeChecksums(t, dir)
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if f := line[66:]; strings.HasPrefix(f, "kubectl-etcd-") {
			listed = append(listed, f)
		}
	}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("%s lists plugins %v, want %v", ChecksumsFile, listed, want)
	}

	if err := checkPlugins(dir, "linux/amd64"); err == nil || !strings.Contains(err.Error(), "kubectl-etcd-darwin-arm64") {
		t.Errorf("a binary of a platform not asked for: %v, want it named", err)
	}
	if err := checkPlugins(dir, platforms+" windows/amd64"); err == nil || !strings.Contains(err.Error(), "kubectl-etcd-windows-amd64") {
		t.Errorf("a platform asked for but not built: %v, want its binary named", err)
	}
	for _, bad := range []string{"", "linux", "linux/amd64/v2"} {
		if err := checkPlugins(dir, bad); err == nil {
			t.Errorf("--plugin-platforms %q accepted", bad)
		}
	}
}

// TestChartPackageAndIndexRecordTheStamp: the chart package's entries and index.yaml's
// created and generated record the stamp (SOURCE_DATE_EPOCH's), not the time of
// packaging, so two packagings of one chart are the same bytes.
func TestChartPackageAndIndexRecordTheStamp(t *testing.T) {
	stamp := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
	var outs []string
	for range 2 {
		out := t.TempDir()
		if err := packageChart(filepath.Join("..", "..", "helm-charts", "etcd-operator"), "9.8.7", testRepo, testDigest, out, "", stamp); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
	}
	tgz := filepath.Join(outs[0], "etcd-operator-9.8.7.tgz")
	pkg, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(pkg))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Comment != "Helm" {
		t.Errorf("the package's gzip comment is %q, want helm's %q kept", zr.Comment, "Helm")
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !h.ModTime.Equal(stamp) {
			t.Errorf("%s in the package has time %v, want %v", h.Name, h.ModTime, stamp)
		}
	}
	if n < 3 {
		t.Errorf("the package has %d files", n)
	}
	if _, err := loader.Load(tgz); err != nil {
		t.Errorf("helm cannot load the restamped package: %v", err)
	}

	raw, err := os.ReadFile(filepath.Join(outs[0], "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var idx repoIndex
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	if es := idx.Entries["etcd-operator"]; !idx.Generated.Equal(stamp) || len(es) != 1 || !es[0].Created.Equal(stamp) {
		t.Errorf("index.yaml:\n%s\nwant generated and created %v", raw, stamp)
	}
	for _, name := range []string{"etcd-operator-9.8.7.tgz", "index.yaml"} {
		a, _ := fileSHA256(filepath.Join(outs[0], name))
		b, _ := fileSHA256(filepath.Join(outs[1], name))
		if a != b || a == "" {
			t.Errorf("%s differs between two packagings with one stamp: %s, %s", name, a, b)
		}
	}
}

func TestSourceDateEpoch(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "SOURCE_DATE_EPOCH" {
				return v
			}
			return ""
		}
	}
	if got, err := SourceDateEpoch(env("")); err != nil || !got.IsZero() {
		t.Errorf("unset: %v, %v; want the zero time (now)", got, err)
	}
	if got, err := SourceDateEpoch(env("1700000000")); err != nil || !got.Equal(time.Unix(1700000000, 0)) || got.Location() != time.UTC {
		t.Errorf("1700000000: %v, %v", got, err)
	}
	for _, bad := range []string{"yesterday", "-1", "1.5", "99999999999999"} {
		if _, err := SourceDateEpoch(env(bad)); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
			t.Errorf("%q: %v, want an error naming SOURCE_DATE_EPOCH", bad, err)
		}
	}
}

// TestCatalogNamesBundlesByDigest: the bundle images are written to the layout under
// their tags (what release-push pushes) and handed to the catalog as
// repository@digest of exactly the image written, so OLM pulls the released bundle.
func TestCatalogNamesBundlesByDigest(t *testing.T) {
	layout := filepath.Join(t.TempDir(), "images")
	dir := filepath.Join("..", "..", "hack", "bundle", "released", "0.1.0")
	got, err := bundleImages(layout, "registry.invalid/x", []olmimage.Bundle{{Dir: dir, Image: bundleRef("registry.invalid/x", "0.1.0")}})
	if err != nil {
		t.Fatal(err)
	}
	_, idx, err := ociimage.ReadLayout(layout)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(idx.Manifests) != 1 {
		t.Fatalf("bundles %v, layout %v: want one each", got, idx.Manifests)
	}
	m := idx.Manifests[0]
	if ref := m.Annotations[ociimage.RefNameAnnotation]; ref != "registry.invalid/x/etcd-operator-bundle:v0.1.0" {
		t.Errorf("the layout names the bundle %q, want its tag", ref)
	}
	if want := "registry.invalid/x/etcd-operator-bundle@" + m.Digest.String(); got[0].Image != want || got[0].Dir != dir {
		t.Errorf("the catalog gets %+v, want %s of %s", got[0], want, dir)
	}
}

// TestPrevVersion: unless given, the Makefile's PREV_VERSION is the newest released
// bundle's version below VERSION (numerically: 0.10.0 is after 0.9.0), so committing
// a release's bundle/ as hack/bundle/released/<VERSION> continues the upgrade chain
// without editing the Makefile, also before VERSION is bumped past it.
func TestPrevVersion(t *testing.T) {
	for _, c := range []struct {
		released      []string
		version, want string
	}{
		{[]string{"0.1.0"}, "0.2.0", "0.1.0"},
		{[]string{"0.1.0", "0.2.0"}, "0.2.0", "0.1.0"},
		{[]string{"0.1.0", "0.2.0"}, "0.3.0", "0.2.0"},
		{[]string{"0.9.0", "0.10.0", "0.2.0"}, "0.11.0", "0.10.0"},
		{[]string{"1.0.0"}, "0.3.0", ""},
		{nil, "0.2.0", ""},
	} {
		dir := t.TempDir()
		for _, v := range c.released {
			if err := os.Mkdir(filepath.Join(dir, v), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("make", "-s", "--no-print-directory", "-C", filepath.Join("..", ".."),
			"--eval", `print-prev: ; @echo "[$(PREV_VERSION)]"`, "print-prev", "RELEASED_DIR="+dir, "VERSION="+c.version)
		// A PREV_VERSION in the environment would count as given.
		cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool {
			return strings.HasPrefix(e, "PREV_VERSION=") || strings.HasPrefix(e, "MAKEFLAGS=")
		})
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make: %v\n%s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != "["+c.want+"]" {
			t.Errorf("released %v, VERSION=%s: PREV_VERSION %s, want [%s]", c.released, c.version, got, c.want)
		}
	}
	// Given, it is kept.
	out, err := exec.Command("make", "-s", "--no-print-directory", "-C", filepath.Join("..", ".."),
		"--eval", `print-prev: ; @echo "[$(PREV_VERSION)]"`, "print-prev", "PREV_VERSION=0.0.7").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "[0.0.7]" {
		t.Errorf("make PREV_VERSION=0.0.7: %v %s", err, out)
	}
}
