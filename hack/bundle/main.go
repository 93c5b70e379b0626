// Command bundle generates the operator's OLM bundle from config/ (see package bundlegen):
//
//	go run ./hack/bundle --version 0.2.0 --image example.com/etcd-operator:v0.2.0 --out bundle \
//	    [--replaces etcd-operator.v0.1.0] [--skip-range '>=0.1.0 <0.2.0'] \
//	    [--channels alpha --default-channel alpha] \
//	    [--dockerfile bundle.Dockerfile] [--chart helm-charts/etcd-operator]
//
// It writes <out>/manifests (the ClusterServiceVersion and the CRDs as
// config/crd/kustomization.yaml builds them), <out>/metadata/
// annotations.yaml and the bundle Dockerfile, and with --chart also refreshes the install
// chart's copies of the CRDs and the manager ClusterRole. Run it from the repository
// root, or pass --root.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("bundle", flag.ContinueOnError)
	var (
		o          bundlegen.Options
		channels   string
		out        string
		dockerfile string
		chart      string
	)
	fs.StringVar(&o.Root, "root", ".", "repository root holding config/")
	fs.StringVar(&o.Version, "version", "", "operator version, semver without a leading v (required)")
	fs.StringVar(&o.Replaces, "replaces", "", "CSV name this version upgrades from, e.g. etcd-operator.v0.1.0")
	fs.StringVar(&o.SkipRange, "skip-range", "", "olm.skipRange annotation, e.g. '>=0.1.0 <0.2.0'")
	fs.StringVar(&channels, "channels", "alpha", "comma-separated channels the bundle is published in")
	fs.StringVar(&o.DefaultChannel, "default-channel", "", "the package's default channel (default: the first channel)")
	fs.StringVar(&o.Image, "image", "", "operator image with its registry, e.g. <registry>/etcd-operator:v<version> (required)")
	fs.StringVar(&out, "out", "bundle", "bundle directory to write")
	fs.StringVar(&dockerfile, "dockerfile", "bundle.Dockerfile", "bundle Dockerfile to write (\"\" to skip); its directory is the build context")
	fs.StringVar(&chart, "chart", "", "install chart directory whose crds/ and files/manager-role.yaml to refresh (\"\" to skip)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, c := range strings.Split(channels, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.Channels = append(o.Channels, c)
		}
	}
	if err := bundlegen.Write(o, out, dockerfile); err != nil {
		return err
	}
	if chart != "" {
		if err := bundlegen.WriteChartFiles(o.Root, chart); err != nil {
			return err
		}
	}
	return nil
}
