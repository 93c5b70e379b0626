package ociimage

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// elfMachines is the ELF machine a Linux binary of each GOARCH is built for.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// CheckELFFor reports whether the ELF executable r holds is built for GOARCH arch and
// needs no dynamic loader: what a FROM-scratch image of that platform can run.
func CheckELFFor(r io.ReaderAt, arch string) error {
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("architecture %q: no ELF machine known for it", arch)
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("an ELF for %s, not for %s (%s)", f.Machine, arch, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%w (build it with CGO_ENABLED=0)", ErrNotStatic)
		}
	}
	return nil
}

// FileFromImage returns the content of the regular file at path (absolute) in img's
// layers, the last layer that has it winning as in a container's root file system.
func FileFromImage(img v1.Image, path string) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	name := strings.TrimPrefix(path, "/")
	var found []byte
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			if strings.TrimPrefix(h.Name, "./") == name && h.Typeflag == tar.TypeReg {
				if found, err = io.ReadAll(tr); err != nil {
					rc.Close()
					return nil, err
				}
			}
		}
		rc.Close()
	}
	if found == nil {
		return nil, fmt.Errorf("no file %s in the image", path)
	}
	return found, nil
}

// CheckIndex checks what a multi-platform image must hold for each node to run it:
// every manifest's descriptor platform is the one its config names, and the
// executable at binary in each is a static ELF for that architecture. It returns the
// platforms found, in index order.
func CheckIndex(idx v1.ImageIndex, binary string) ([]string, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var platforms []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			return platforms, fmt.Errorf("manifest %s has no platform in the index", d.Digest)
		}
		p := d.Platform.String()
		img, err := idx.Image(d.Digest)
		if err != nil {
			return platforms, fmt.Errorf("%s: %w", p, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return platforms, fmt.Errorf("%s: %w", p, err)
		}
		if cfg.OS != d.Platform.OS || cfg.Architecture != d.Platform.Architecture {
			return platforms, fmt.Errorf("the index lists %s, its config says %s/%s", p, cfg.OS, cfg.Architecture)
		}
		data, err := FileFromImage(img, binary)
		if err != nil {
			return platforms, fmt.Errorf("%s: %w", p, err)
		}
		if err := CheckELFFor(bytes.NewReader(data), cfg.Architecture); err != nil {
			return platforms, fmt.Errorf("%s: %s: %w", p, binary, err)
		}
		platforms = append(platforms, p)
	}
	return platforms, nil
}
