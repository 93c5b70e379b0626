// Command release assembles a release of the operator into one directory, from the
// multi-platform operator image hack/image wrote there, and pushes its images. `make
// release` and `make release-push` run it; see the README's "Making a release" section.
//
//	tmp=$(go run ./hack/release begin --out dist/0.2.0)
//	go run ./hack/release assemble --out "$tmp" --version 0.2.0 --prev-version 0.1.0 \
//	    --registry REGISTRY --image REGISTRY/etcd-operator:v0.2.0@sha256:… \
//	    --opm-dir "$(hack/tools.sh path)/opm-v1.60.0" --kustomize "$(hack/tools.sh path)/bin/kustomize-v5.8.2"
//	go run ./hack/release finish --tmp "$tmp" --out dist/0.2.0
//	go run ./hack/release push --out dist/0.2.0
//
// begin refuses a release directory that holds anything but a release make release
// wrote (see CheckReplaceable) and creates the directory beside it that the release is
// built in; finish renames that onto the release directory, so a failed build leaves
// the previous release as it was.
//
// assemble adds to <out>: the OLM bundle images of this version and of the previous
// release, and the catalog image of both, to the OCI layout <out>/images (beside the
// operator image index); this version's bundle directory as bundle/ (committed as
// hack/bundle/released/<version>, the next release's previous one); the file-based
// catalog as catalog.yaml, naming the bundle images by digest; the install chart
// packaged as etcd-operator-<version>.tgz with an index.yaml; install.yaml, the
// kustomize build of config/default; and SHA256SUMS over every file, last. The
// operator image is named by the digest of its index everywhere (CSV, chart,
// install.yaml), so each install method runs exactly the released image. The
// kubectl-etcd-<os>-<arch> binaries make built into <out> must be exactly those of
// --plugin-platforms, so that SHA256SUMS covers each one built and nothing else.
// index.yaml and the chart package record SOURCE_DATE_EPOCH as their time when it is
// set (make release sets it to the commit's time), so releasing one commit twice gives
// the same files.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

const usage = "usage: release begin|assemble|finish|push [flags] (-h for flags)"

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "assemble":
		fs := flag.NewFlagSet("release assemble", flag.ContinueOnError)
		var o Options
		fs.StringVar(&o.Root, "root", ".", "repository root")
		fs.StringVar(&o.Out, "out", "", "release directory, holding the operator image in images/ (required)")
		fs.StringVar(&o.Version, "version", "", "version released, semver without a leading v (required)")
		fs.StringVar(&o.PrevVersion, "prev-version", "", "the release this one replaces in the OLM channel; its bundle is <released-dir>/<it>")
		fs.StringVar(&o.ReleasedDir, "released-dir", filepath.Join("hack", "bundle", "released"), "directory of the released bundles, one per version, relative to --root")
		fs.StringVar(&o.Registry, "registry", "", "registry (and path) the images are pushed under (required)")
		fs.StringVar(&o.Image, "image", "", "the operator image index as hack/image printed it, <ref>@sha256:… (required)")
		fs.StringVar(&o.Channel, "channel", "alpha", "OLM channel")
		fs.StringVar(&o.OPMDir, "opm-dir", "", "directory holding opm (hack/tools.sh olm) (required)")
		fs.StringVar(&o.Kustomize, "kustomize", "", "kustomize binary (required)")
		fs.StringVar(&o.ChartURL, "chart-url", "", "base URL the chart package will be served from, for index.yaml (default: relative)")
		fs.StringVar(&o.PluginPlatforms, "plugin-platforms", "", "space-separated OS/ARCH list the kubectl-etcd binaries in --out were built for (make's PLUGIN_PLATFORMS) (required)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		stamp, err := SourceDateEpoch(os.Getenv)
		if err != nil {
			return err
		}
		o.Stamp = stamp
		return Assemble(o, stdout)
	case "begin":
		fs := flag.NewFlagSet("release begin", flag.ContinueOnError)
		out := fs.String("out", "", "the release directory (make's DIST) (required)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		tmp, err := Begin(*out)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, tmp)
		return nil
	case "finish":
		fs := flag.NewFlagSet("release finish", flag.ContinueOnError)
		out := fs.String("out", "", "the release directory (make's DIST) (required)")
		tmp := fs.String("tmp", "", "the directory begin created, holding the assembled release (required)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *tmp == "" {
			return errors.New("need --tmp")
		}
		if err := Finish(*tmp, *out); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "release written to", *out)
		return nil
	case "push":
		fs := flag.NewFlagSet("release push", flag.ContinueOnError)
		out := fs.String("out", "", "release directory written by assemble (required)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *out == "" {
			return errors.New("need --out")
		}
		if err := VerifyChecksums(*out); err != nil {
			return err
		}
		refs, err := ociimage.PushLayout(imagesDir(*out))
		for _, r := range refs {
			fmt.Fprintln(stdout, "pushed", r)
		}
		return err
	}
	return fmt.Errorf("unknown command %q; %s", args[0], usage)
}
