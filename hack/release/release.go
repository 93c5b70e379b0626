package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
	"github.com/etcd-operator/etcd-operator/hack/catalog/olmimage"
	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// Options of Assemble; see the assemble command's flags.
type Options struct {
	Root, Out, Version, PrevVersion, ReleasedDir, Registry, Image, Channel, OPMDir, Kustomize, ChartURL string
	// PluginPlatforms is the space-separated OS/ARCH list of the kubectl-etcd binaries.
	PluginPlatforms string
	// Stamp is the time the release's files record (index.yaml's created and generated,
	// the chart package's file times): SOURCE_DATE_EPOCH's when set, so two releases of
	// one commit are the same bytes; the zero time means now.
	Stamp time.Time
}

// SourceDateEpoch is the time SOURCE_DATE_EPOCH (seconds since 1970, UTC; the
// reproducible-builds convention) holds, or the zero time when it is unset or empty.
func SourceDateEpoch(getenv func(string) string) (time.Time, error) {
	v := getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Time{}, nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 || sec > 253402300799 { // up to 9999-12-31, which YAML and tar can write
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970 (git log -1 --format=%%ct prints one)", v)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// pluginPrefix starts the name of each kubectl plugin binary of a release:
// kubectl-etcd-<os>-<arch>, as the Makefile builds them.
const pluginPrefix = "kubectl-etcd-"

// checkPlugins checks that dir holds a kubectl plugin binary for each of platforms
// (OS/ARCH, space-separated) and none for another, so that a build that wrote nothing
// or a stale binary fails the release instead of shipping without it.
func checkPlugins(dir, platforms string) error {
	want := map[string]bool{}
	for _, p := range strings.Fields(platforms) {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || arch == "" || strings.ContainsAny(arch, "/") {
			return fmt.Errorf("plugin platform %q is not OS/ARCH", p)
		}
		want[pluginPrefix+goos+"-"+arch] = true
	}
	if len(want) == 0 {
		return errors.New("need --plugin-platforms")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var extra []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), pluginPrefix) {
			continue
		}
		if !want[e.Name()] || !e.Type().IsRegular() {
			extra = append(extra, e.Name())
		}
		delete(want, e.Name())
	}
	if len(want) > 0 || len(extra) > 0 {
		return fmt.Errorf("kubectl plugin binaries in %s: missing %v, not of --plugin-platforms %v", dir, slices.Sorted(maps.Keys(want)), extra)
	}
	return nil
}

// ChecksumsFile lists the SHA-256 of every other file of a release, as sha256sum
// writes it (`sha256sum -c SHA256SUMS` in the release directory checks them).
const ChecksumsFile = "SHA256SUMS"

func imagesDir(out string) string { return filepath.Join(out, "images") }

// Names of the images under the registry, as the Makefile's IMAGE_TAG_BASE has them.
func operatorRepo(registry string) string { return registry + "/etcd-operator" }
func bundleRepo(registry string) string   { return registry + "/etcd-operator-bundle" }
func bundleRef(registry, version string) string {
	return bundleRepo(registry) + ":v" + version
}
func catalogRef(registry, version string) string {
	return registry + "/etcd-operator-catalog:v" + version
}

// pinned is the operator image by the digest of its index: repository@sha256:….
func pinned(o Options) (repository, digest string, err error) {
	_, dg, ok := strings.Cut(o.Image, "@")
	if !ok {
		return "", "", fmt.Errorf("--image %q names no digest; pass what hack/image printed", o.Image)
	}
	d, err := name.NewDigest(operatorRepo(o.Registry)+"@"+dg, name.Insecure)
	if err != nil {
		return "", "", fmt.Errorf("--image %q: %w", o.Image, err)
	}
	return operatorRepo(o.Registry), d.DigestStr(), nil
}

// Assemble writes the release into o.Out (see the package comment).
func Assemble(o Options, stdout io.Writer) error {
	for flagName, v := range map[string]string{"out": o.Out, "version": o.Version, "registry": o.Registry,
		"image": o.Image, "opm-dir": o.OPMDir, "kustomize": o.Kustomize} {
		if v == "" {
			return fmt.Errorf("need --%s", flagName)
		}
	}
	if err := checkPlugins(o.Out, o.PluginPlatforms); err != nil {
		return err
	}
	repository, digest, err := pinned(o)
	if err != nil {
		return err
	}
	image := repository + "@" + digest
	if o.Stamp.IsZero() {
		o.Stamp = time.Now()
	}
	o.Stamp = o.Stamp.UTC().Truncate(time.Second)
	work, err := os.MkdirTemp("", "release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	// The bundle of this version, generated from config/ as `make bundle` does but
	// naming the released image; and the previous release's bundle as it was released.
	// This version's is kept in <out>/bundle: committed as <released-dir>/<version>, it
	// is what the next release's catalog upgrades from.
	bo := bundlegen.Options{Root: o.Root, Version: o.Version, Channels: []string{o.Channel}, DefaultChannel: o.Channel, Image: image}
	if o.PrevVersion != "" {
		bo.Replaces = bundlegen.CSVName(o.PrevVersion)
	}
	bundleDir := filepath.Join(o.Out, "bundle")
	if err := bundlegen.Write(bo, bundleDir, ""); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	bundles := []olmimage.Bundle{{Dir: bundleDir, Image: bundleRef(o.Registry, o.Version)}}
	if o.PrevVersion != "" {
		released := o.ReleasedDir
		if released == "" {
			released = filepath.Join("hack", "bundle", "released")
		}
		if !filepath.IsAbs(released) {
			released = filepath.Join(o.Root, released)
		}
		prev := olmimage.Bundle{Dir: filepath.Join(released, o.PrevVersion), Image: bundleRef(o.Registry, o.PrevVersion)}
		bundles = append([]olmimage.Bundle{prev}, bundles...)
	}
	bundles, err = bundleImages(imagesDir(o.Out), o.Registry, bundles)
	if err != nil {
		return err
	}
	fbc, catalog, err := olmimage.BuildCatalog(o.OPMDir, olmimage.Catalog{Channel: o.Channel, Bundles: bundles}, filepath.Join(work, "catalog"))
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if err := ociimage.WriteLayout(imagesDir(o.Out), catalogRef(o.Registry, o.Version), catalog); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.Out, "catalog.yaml"), fbc, 0o644); err != nil {
		return err
	}

	if err := packageChart(filepath.Join(o.Root, "helm-charts", "etcd-operator"), o.Version, repository, digest, o.Out, o.ChartURL, o.Stamp); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	if err := installYAML(o, repository, digest, work); err != nil {
		return fmt.Errorf("install.yaml: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.Out, MarkerFile), []byte("etcd-operator "+o.Version+"\n"), 0o644); err != nil {
		return err
	}
	if err := WriteChecksums(o.Out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %s in %s: operator %s\n", o.Version, o.Out, image)
	return nil
}

// bundleImages builds the image of each bundle and writes it to the OCI layout under its
// tag (b.Image, the name release-push pushes), and returns the bundles as the catalog
// names them: by digest, repository@sha256:…, so OLM installs exactly the bundle
// released, whatever the tag is later moved to.
func bundleImages(layout, registry string, bundles []olmimage.Bundle) ([]olmimage.Bundle, error) {
	var pinned []olmimage.Bundle
	for _, b := range bundles {
		spec, err := olmimage.BundleSpec(b.Dir)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", b.Image, err)
		}
		img, err := ociimage.Build(spec)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", b.Image, err)
		}
		if err := ociimage.WriteLayout(layout, b.Image, img); err != nil {
			return nil, err
		}
		dg, err := img.Digest()
		if err != nil {
			return nil, err
		}
		pinned = append(pinned, olmimage.Bundle{Dir: b.Dir, Image: bundleRepo(registry) + "@" + dg.String()})
	}
	return pinned, nil
}

// releasedImageComment replaces, in a packaged chart's values.yaml, the comment above
// image.repository (which, in the checkout, says example.com is a placeholder to set).
const releasedImageComment = `  # The operator image this chart version was released with: repository and digest name
  # its multi-platform image index. To run another image set image.repository and
  # image.digest, or image.digest="" and image.tag (a digest, when set, is used instead
  # of the tag).
`

// valuesImage matches the install chart's image block up to its digest line; its first
// group is the comment above repository.
var valuesImage = regexp.MustCompile(`(?m)^image:\n((?:  .*\n|\s*\n)*?)  repository: .*\n((?:  .*\n)*?)  digest: ""\n`)

// packageChart writes the install chart as <out>/etcd-operator-<version>.tgz, with
// version and appVersion set to version and its default image pinned to
// repository@digest, and an index.yaml listing it, both recording stamp as their time.
// values.yaml is edited as text so its comments (the chart's documentation) survive.
func packageChart(dir, version, repository, digest, out, url string, stamp time.Time) error {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return err
	}
	ch.Metadata.Version = version
	ch.Metadata.AppVersion = version
	found := false
	for _, f := range ch.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		m := valuesImage.FindSubmatchIndex(f.Data)
		if m == nil {
			return fmt.Errorf("%s: no image block with repository and digest: \"\" to pin", chartutil.ValuesfileName)
		}
		var b bytes.Buffer
		b.Write(f.Data[:m[0]])
		b.WriteString("image:\n")
		// The checkout's comment tells to replace a placeholder; here there is none.
		b.WriteString(releasedImageComment)
		fmt.Fprintf(&b, "  repository: %s\n", repository)
		b.Write(f.Data[m[4]:m[5]])
		fmt.Fprintf(&b, "  digest: %q\n", digest)
		b.Write(f.Data[m[1]:])
		f.Data = b.Bytes()
		if ch.Values, err = chartutil.ReadValues(f.Data); err != nil {
			return err
		}
		found = true
	}
	if !found {
		return fmt.Errorf("%s has no %s", dir, chartutil.ValuesfileName)
	}
	if err := ch.Validate(); err != nil {
		return err
	}
	tgz, err := chartutil.Save(ch, out)
	if err != nil {
		return err
	}
	if err := restampArchive(tgz, stamp); err != nil {
		return err
	}
	sum, err := fileSHA256(tgz)
	if err != nil {
		return err
	}
	return writeRepoIndex(filepath.Join(out, "index.yaml"), ch.Metadata, filepath.Base(tgz), url, sum, stamp)
}

// restampArchive rewrites the gzipped tar file so that every entry's modification time
// is stamp: helm's chartutil.Save records the time of saving, which would make each
// package (and so index.yaml's digest of it) differ from the last. The gzip header
// (helm's comment and extra field) and the entries are kept as they are.
func restampArchive(file string, stamp time.Time) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Header = zr.Header
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		h.ModTime, h.AccessTime, h.ChangeTime = stamp, time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, out.Bytes(), 0o644)
}

// chartEntry is one chart version in a chart repository's index.yaml: the chart's
// metadata and where its package is, as `helm repo index` writes it. (helm's own
// pkg/repo would pull an OCI client and kubectl's libraries into the module for this.)
type chartEntry struct {
	*chart.Metadata
	URLs    []string  `json:"urls"`
	Created time.Time `json:"created"`
	Digest  string    `json:"digest"`
}

type repoIndex struct {
	APIVersion string                  `json:"apiVersion"`
	Entries    map[string][]chartEntry `json:"entries"`
	Generated  time.Time               `json:"generated"`
}

// writeRepoIndex writes the index.yaml of a chart repository holding one package,
// file, whose SHA-256 is digest, served at url/file (or relative to index.yaml).
func writeRepoIndex(path string, md *chart.Metadata, file, url, digest string, now time.Time) error {
	u := file
	if url != "" {
		u = strings.TrimSuffix(url, "/") + "/" + file
	}
	idx := repoIndex{APIVersion: "v1", Generated: now.UTC(), Entries: map[string][]chartEntry{
		md.Name: {{Metadata: md, URLs: []string{u}, Created: now.UTC(), Digest: digest}},
	}}
	raw, err := yaml.Marshal(idx)
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// installYAML writes <out>/install.yaml: config/default built by kustomize through an
// overlay that sets the operator image to repository@digest.
func installYAML(o Options, repository, digest, work string) error {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return err
	}
	placeholder, err := kustomizeImage(filepath.Join(root, "config", "manager", "kustomization.yaml"))
	if err != nil {
		return err
	}
	overlay := filepath.Join(work, "install")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		return err
	}
	// kustomize takes a base only by a relative path.
	base, err := filepath.Rel(overlay, filepath.Join(root, "config", "default"))
	if err != nil {
		return err
	}
	kz := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
		"resources": []string{filepath.ToSlash(base)},
		"images":    []map[string]string{{"name": placeholder, "newName": repository, "digest": digest}},
	}
	raw, err := yaml.Marshal(kz)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), raw, 0o644); err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(o.Kustomize, "build", overlay)
	cmd.Stderr = &stderr
	built, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("kustomize build: %w\n%s", err, stderr.String())
	}
	// The overlay must have matched: an image name config/manager stops using would
	// otherwise ship install.yaml with the placeholder image.
	if want := "image: " + repository + "@" + digest; !bytes.Contains(built, []byte(want)) {
		return fmt.Errorf("the operator Deployment does not run %s (config/manager's image is %s)", repository+"@"+digest, placeholder)
	}
	return os.WriteFile(filepath.Join(o.Out, "install.yaml"), built, 0o644)
}

// kustomizeImage is the image name config/manager's images: entry gives the operator
// (its newName), which the release overlay replaces.
func kustomizeImage(file string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var kz struct {
		Images []struct{ Name, NewName string } `json:"images"`
	}
	if err := yaml.Unmarshal(raw, &kz); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if len(kz.Images) != 1 || kz.Images[0].NewName == "" {
		return "", fmt.Errorf("%s: want one images: entry with a newName, got %+v", file, kz.Images)
	}
	return kz.Images[0].NewName, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteChecksums writes dir/SHA256SUMS over every regular file under dir but itself,
// sorted by path, in sha256sum's format ("<hex>  <path>").
func WriteChecksums(dir string) error {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || d.IsDir() || rel == ChecksumsFile {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+filepath.ToSlash(rel)+"\n")
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(strings.Join(lines, "")), 0o644)
}

// VerifyChecksums checks every file SHA256SUMS lists in dir, as `sha256sum -c` does,
// so that what is pushed is what was released.
func VerifyChecksums(dir string) error {
	f, err := os.Open(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	var bad []string
	for sc.Scan() {
		sum, rel, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			return fmt.Errorf("%s: line %q is not \"<sha256>  <file>\"", ChecksumsFile, sc.Text())
		}
		got, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil || got != sum {
			bad = append(bad, rel)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %d of %d files changed or missing since the release was made: %v", ChecksumsFile, len(bad), n, bad)
	}
	if n == 0 {
		return errors.New(ChecksumsFile + " lists no files")
	}
	return nil
}
