// Command catalog builds OLM's bundle and catalog images without a container daemon
// (see hack/catalog/olmimage) and writes them as a `docker load` archive, into an OCI
// layout, or pushes them (plain HTTP for loopback registries).
//
//	go run ./hack/catalog bundle --dir bundle --tag REG/etcd-operator-bundle:v0.2.0 --push
//	go run ./hack/catalog catalog --opm-dir "$(bash hack/tools.sh path)/opm-v1.60.0" \
//	    --bundle hack/bundle/released/0.1.0=REG/etcd-operator-bundle:v0.1.0 \
//	    --bundle bundle=REG/etcd-operator-bundle:v0.2.0 \
//	    --channel alpha --tag REG/etcd-operator-catalog:v0.2.0 --push
//
// Bundles are given oldest first; the channel's upgrade edges come from each CSV's
// replaces. The catalog names bundle images; pushing them is the bundle command's job.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/etcd-operator/etcd-operator/hack/catalog/olmimage"
	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

const usage = "usage: catalog bundle|catalog [flags] (-h for flags)"

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "bundle":
		return runBundle(args[1:], stdout)
	case "catalog":
		return runCatalog(args[1:], stdout)
	}
	return fmt.Errorf("unknown command %q; %s", args[0], usage)
}

// output says where an image goes.
type output struct {
	tag, tar, oci string
	push          bool
}

func (o *output) register(fs *flag.FlagSet, example string) {
	fs.StringVar(&o.tag, "tag", "", "image reference, e.g. "+example)
	fs.StringVar(&o.tar, "tar", "", "write a docker-load archive here")
	fs.StringVar(&o.oci, "oci", "", "append the image to this OCI layout directory")
	fs.BoolVar(&o.push, "push", false, "push to the registry named in --tag")
}

// parse registers o's flags on fs (example: a --tag for the help text), parses args and
// checks that o says where the image goes.
func (o *output) parse(fs *flag.FlagSet, example string, args []string) error {
	o.register(fs, example)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return o.check()
}

func (o *output) check() error {
	if o.tag == "" || (o.tar == "" && o.oci == "" && !o.push) {
		return errors.New("need --tag and at least one of --tar, --oci, --push")
	}
	return nil
}

// write sends img where o says and prints its reference with its digest.
func (o *output) write(img v1.Image, stdout io.Writer) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if o.tar != "" {
		if err := ociimage.WriteTarball(o.tar, o.tag, img); err != nil {
			return err
		}
	}
	if o.oci != "" {
		if err := ociimage.WriteLayout(o.oci, o.tag, img); err != nil {
			return err
		}
	}
	if o.push {
		if err := ociimage.Push(o.tag, img); err != nil {
			return fmt.Errorf("push %s: %w", o.tag, err)
		}
	}
	_, err = fmt.Fprintf(stdout, "%s@%s\n", o.tag, digest)
	return err
}

func runBundle(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("catalog bundle", flag.ContinueOnError)
	dir := fs.String("dir", "bundle", "registry+v1 bundle directory (manifests/, metadata/)")
	var out output
	if err := out.parse(fs, "etcd-operator-bundle:v0.2.0", args); err != nil {
		return err
	}
	spec, err := olmimage.BundleSpec(*dir)
	if err != nil {
		return err
	}
	img, err := ociimage.Build(spec)
	if err != nil {
		return err
	}
	return out.write(img, stdout)
}

// bundleFlags collects repeated --bundle DIR=IMAGE.
type bundleFlags []olmimage.Bundle

func (b *bundleFlags) String() string { return fmt.Sprint(*b) }

func (b *bundleFlags) Set(v string) error {
	dir, img, ok := strings.Cut(v, "=")
	if !ok || dir == "" || img == "" {
		return fmt.Errorf("%q: want DIR=IMAGE", v)
	}
	*b = append(*b, olmimage.Bundle{Dir: dir, Image: img})
	return nil
}

func runCatalog(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("catalog catalog", flag.ContinueOnError)
	opmDir := fs.String("opm-dir", "", "directory holding opm and grpc_health_probe (hack/tools.sh olm)")
	channel := fs.String("channel", "alpha", "channel every bundle is entered in")
	fbcOut := fs.String("fbc-out", "", "also write the rendered file-based catalog here")
	var bundles bundleFlags
	fs.Var(&bundles, "bundle", "DIR=IMAGE of a bundle in the catalog, oldest first (repeat)")
	var out output
	if err := out.parse(fs, "etcd-operator-catalog:v0.2.0", args); err != nil {
		return err
	}
	if *opmDir == "" {
		return errors.New("need --opm-dir")
	}
	work, err := os.MkdirTemp("", "catalog-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fbc, img, err := olmimage.BuildCatalog(*opmDir, olmimage.Catalog{Channel: *channel, Bundles: bundles}, work)
	if err != nil {
		return err
	}
	if *fbcOut != "" {
		if err := os.WriteFile(*fbcOut, fbc, 0o644); err != nil {
			return err
		}
	}
	return out.write(img, stdout)
}
