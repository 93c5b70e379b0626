// Command image builds the operator image without a container daemon: the same
// filesystem and config as the Dockerfile (see internal/ociimage), from a static binary
// already built with `CGO_ENABLED=0 go build`. It writes a `docker load` archive, an OCI
// layout, or pushes to a registry (plain HTTP for loopback registries).
//
//	go run ./hack/image --binary bin/manager --tag etcd-operator:v0.2.0 --tar bin/operator-image.tar
//	go run ./hack/image --binary bin/manager --tag 127.0.0.1:5000/etcd-operator:v0.2.0 --push
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	binary := fs.String("binary", "bin/manager", "static operator binary (CGO_ENABLED=0 go build -o bin/manager .)")
	ca := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA certificates bundle to put at "+ociimage.CABundlePath)
	tag := fs.String("tag", "", "image reference, e.g. etcd-operator:v0.2.0")
	tarFile := fs.String("tar", "", "write a docker-load archive here")
	ociDir := fs.String("oci", "", "append the image to this OCI layout directory")
	push := fs.Bool("push", false, "push to the registry named in --tag")
	arch := fs.String("arch", "amd64", "architecture the binary was built for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tag == "" || (*tarFile == "" && *ociDir == "" && !*push) {
		return errors.New("need --tag and at least one of --tar, --oci, --push")
	}
	if err := ociimage.CheckStatic(*binary); err != nil {
		return err
	}
	spec := ociimage.OperatorSpec(*binary, *ca)
	spec.Architecture = *arch
	img, err := ociimage.Build(spec)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if *tarFile != "" {
		if err := ociimage.WriteTarball(*tarFile, *tag, img); err != nil {
			return err
		}
	}
	if *ociDir != "" {
		if err := ociimage.WriteLayout(*ociDir, *tag, img); err != nil {
			return err
		}
	}
	if *push {
		if err := ociimage.Push(*tag, img); err != nil {
			return fmt.Errorf("push %s: %w", *tag, err)
		}
	}
	fmt.Printf("%s@%s\n", *tag, digest)
	return nil
}
