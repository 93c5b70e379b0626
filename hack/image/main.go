// Command image builds the operator image without a container daemon: the same
// filesystem and config as the Dockerfile (see internal/ociimage), from a static binary
// already built with `CGO_ENABLED=0 go build`. It writes a `docker load` archive, an OCI
// layout, or pushes to a registry (plain HTTP for loopback registries).
//
//	go run ./hack/image --binary bin/manager --tag etcd-operator:v0.2.0 --tar bin/operator-image.tar
//	go run ./hack/image --binary bin/manager --tag 127.0.0.1:5000/etcd-operator:v0.2.0 --push
//
// Given --binary OS/ARCH=FILE once per platform, it builds one image per platform and
// an OCI image index of them (a multi-platform image; no docker-load archive), and checks
// that each platform's image runs an executable built for it before writing anything:
//
//	go run ./hack/image --binary linux/amd64=bin/manager-linux-amd64 \
//	    --binary linux/arm64=bin/manager-linux-arm64 --tag REGISTRY/etcd-operator:v0.2.0 --oci dist/images
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// platformBinary is one --binary: a file, with the platform it was built for when given as
// OS/ARCH=FILE.
type platformBinary struct {
	os, arch, file string
}

type binaryFlags []platformBinary

func (b *binaryFlags) String() string { return fmt.Sprint(*b) }

func (b *binaryFlags) Set(v string) error {
	platform, file, ok := strings.Cut(v, "=")
	if !ok {
		*b = append(*b, platformBinary{file: v})
		return nil
	}
	goos, arch, ok := strings.Cut(platform, "/")
	if !ok || goos == "" || arch == "" || file == "" {
		return fmt.Errorf("%q: want FILE or OS/ARCH=FILE", v)
	}
	*b = append(*b, platformBinary{os: goos, arch: arch, file: file})
	return nil
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var binaries binaryFlags
	fs.Var(&binaries, "binary", "static operator binary (CGO_ENABLED=0 go build -o bin/manager .), or OS/ARCH=FILE once per platform of a multi-platform image (default bin/manager)")
	ca := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA certificates bundle to put at "+ociimage.CABundlePath)
	tag := fs.String("tag", "", "image reference, e.g. etcd-operator:v0.2.0")
	tarFile := fs.String("tar", "", "write a docker-load archive here (one platform only)")
	ociDir := fs.String("oci", "", "append the image to this OCI layout directory")
	push := fs.Bool("push", false, "push to the registry named in --tag")
	arch := fs.String("arch", "amd64", "architecture a plain --binary was built for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tag == "" || (*tarFile == "" && *ociDir == "" && !*push) {
		return errors.New("need --tag and at least one of --tar, --oci, --push")
	}
	if len(binaries) == 0 {
		binaries = binaryFlags{{file: "bin/manager"}}
	}
	multi := binaries[0].arch != ""
	for _, b := range binaries {
		if (b.arch != "") != multi {
			return errors.New("give one plain --binary FILE, or OS/ARCH=FILE for every platform")
		}
	}
	if !multi {
		if len(binaries) > 1 {
			return errors.New("more than one plain --binary: name each one's platform as OS/ARCH=FILE")
		}
		binaries[0].os, binaries[0].arch = "linux", *arch
	}
	if multi && *tarFile != "" {
		return errors.New("--tar writes one platform's image; use --oci or --push for a multi-platform one")
	}

	var imgs []v1.Image
	for _, b := range binaries {
		img, err := build(b, *ca)
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
	}
	if !multi {
		return writeImage(imgs[0], *tag, *tarFile, *ociDir, *push, stdout)
	}
	idx, err := ociimage.Index(imgs...)
	if err != nil {
		return err
	}
	// The check a release depends on: a binary given for the wrong platform would
	// otherwise only show as "exec format error" on that platform's nodes.
	if _, err := ociimage.CheckIndex(idx, ociimage.OperatorBinaryPath); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if *ociDir != "" {
		if err := ociimage.WriteIndexLayout(*ociDir, *tag, idx); err != nil {
			return err
		}
	}
	if *push {
		if err := ociimage.PushIndex(*tag, idx); err != nil {
			return fmt.Errorf("push %s: %w", *tag, err)
		}
	}
	_, err = fmt.Fprintf(stdout, "%s@%s\n", *tag, digest)
	return err
}

// build is the operator image of one binary, for the platform it names.
func build(b platformBinary, ca string) (v1.Image, error) {
	if b.os != "linux" {
		return nil, fmt.Errorf("%s: the operator image is for linux, not %s", b.file, b.os)
	}
	if err := ociimage.CheckStatic(b.file); err != nil {
		return nil, err
	}
	spec := ociimage.OperatorSpec(b.file, ca)
	spec.OS, spec.Architecture = b.os, b.arch
	return ociimage.Build(spec)
}

func writeImage(img v1.Image, tag, tarFile, ociDir string, push bool, stdout io.Writer) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if tarFile != "" {
		if err := ociimage.WriteTarball(tarFile, tag, img); err != nil {
			return err
		}
	}
	if ociDir != "" {
		if err := ociimage.WriteLayout(ociDir, tag, img); err != nil {
			return err
		}
	}
	if push {
		if err := ociimage.Push(tag, img); err != nil {
			return fmt.Errorf("push %s: %w", tag, err)
		}
	}
	_, err = fmt.Fprintf(stdout, "%s@%s\n", tag, digest)
	return err
}
