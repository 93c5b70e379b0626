package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// elfHeader is the smallest file debug/elf reads as a static executable for machine:
// a 64-bit little-endian ELF header with no program or section headers. It stands in
// for a cross-compiled operator (compiling one per architecture takes minutes; the
// release e2e test builds the real ones).
func elfHeader(machine elf.Machine) []byte {
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	b.Write(make([]byte, 9)) // OS ABI, ABI version, padding
	for _, v := range []any{uint16(elf.ET_EXEC), uint16(machine), uint32(elf.EV_CURRENT),
		uint64(0), uint64(0), uint64(0), // entry, phoff, shoff
		uint32(0), uint16(64), uint16(56), uint16(0), uint16(64), uint16(0), uint16(0)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	return b.Bytes()
}

func fixture(t *testing.T) (dir string, files map[string]string) {
	t.Helper()
	dir = t.TempDir()
	files = map[string]string{"ca": filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(files["ca"], []byte("not a real bundle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for arch, m := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		files[arch] = filepath.Join(dir, "manager-"+arch)
		if err := os.WriteFile(files[arch], elfHeader(m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

const testTag = "registry.invalid/etcd-operator:v9.9.9"

// TestMultiPlatformIndex builds the operator image for two platforms as `make release`
// does and reads the layout back without the package's own checks: one index named by
// the tag, a manifest per platform whose config names that platform, and in each a
// /manager that is an ELF executable for that platform's machine.
func TestMultiPlatformIndex(t *testing.T) {
	dir, files := fixture(t)
	out := filepath.Join(dir, "layout")
	var stdout bytes.Buffer
	if err := run([]string{"--binary", "linux/amd64=" + files["amd64"], "--binary", "linux/arm64=" + files["arm64"],
		"--ca-bundle", files["ca"], "--tag", testTag, "--oci", out}, &stdout); err != nil {
		t.Fatal(err)
	}
	top, tm, err := ociimage.ReadLayout(out)
	if err != nil || len(tm.Manifests) != 1 {
		t.Fatalf("layout holds %v (%v), want one entry", tm, err)
	}
	d := tm.Manifests[0]
	if !d.MediaType.IsIndex() || d.Annotations[ociimage.RefNameAnnotation] != testTag {
		t.Fatalf("layout entry %s %v, want an index named %s", d.MediaType, d.Annotations, testTag)
	}
	if got, want := strings.TrimSpace(stdout.String()), testTag+"@"+d.Digest.String(); got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	seen := map[string]bool{}
	for _, d := range m.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" {
			t.Fatalf("manifest %s platform %v, want linux/<arch>", d.Digest, d.Platform)
		}
		arch := d.Platform.Architecture
		seen[arch] = true
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != "linux" || cfg.Architecture != arch {
			t.Errorf("the %s manifest's config names %s/%s", arch, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != ociimage.NonRootUser || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != ociimage.OperatorBinaryPath {
			t.Errorf("the %s image's config %+v is not the operator's", arch, cfg.Config)
		}
		data, err := ociimage.FileFromImage(img, ociimage.OperatorBinaryPath)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: /manager: %v", arch, err)
		}
		if f.Machine != want[arch] {
			t.Errorf("%s: /manager is an ELF for %s, want %s", arch, f.Machine, want[arch])
		}
	}
	if len(m.Manifests) != 2 || !seen["amd64"] || !seen["arm64"] {
		t.Errorf("index platforms %v in %d manifests, want amd64 and arm64", seen, len(m.Manifests))
	}
}

// TestMultiPlatformRefusals: a binary given for the wrong platform is refused before
// anything is written, as are a docker-load archive of several platforms and a mix of
// plain and platform-named binaries.
func TestMultiPlatformRefusals(t *testing.T) {
	dir, files := fixture(t)
	out := filepath.Join(dir, "layout")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"swapped", []string{"--binary", "linux/amd64=" + files["arm64"], "--binary", "linux/arm64=" + files["amd64"], "--oci", out}, "not for amd64"},
		{"tar", []string{"--binary", "linux/amd64=" + files["amd64"], "--binary", "linux/arm64=" + files["arm64"], "--tar", filepath.Join(dir, "x.tar")}, "--tar writes one platform"},
		{"mixed", []string{"--binary", files["amd64"], "--binary", "linux/arm64=" + files["arm64"], "--oci", out}, "OS/ARCH=FILE for every platform"},
		{"duplicate", []string{"--binary", "linux/amd64=" + files["amd64"], "--binary", "linux/amd64=" + files["amd64"], "--oci", out}, "two images for platform linux/amd64"},
		{"darwin", []string{"--binary", "darwin/arm64=" + files["arm64"], "--oci", out}, "for linux"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(append(tc.args, "--ca-bundle", files["ca"], "--tag", testTag), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused build wrote %s (%v)", out, err)
			}
		})
	}
}
