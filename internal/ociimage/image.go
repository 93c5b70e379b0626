// Package ociimage builds container images from files on disk without a container
// daemon, so a machine with only Go can produce the images that `docker build` makes
// from this repository's Dockerfiles, and push them to a registry.
//
// Images are reproducible: the same files and Spec give the same digest (every
// timestamp is the Unix epoch, owners are fixed, entries are sorted), so a rebuild that
// changed nothing is not a new image.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of the image's single layer.
type File struct {
	// Path is absolute inside the image, e.g. /manager.
	Path string
	// Source is the host file whose content is copied; empty for a directory.
	Source string
	// Mode holds the permission bits (and sticky bit) of the entry.
	Mode os.FileMode
	// Dir makes the entry a directory (Source must be empty).
	Dir bool
	// UID and GID own the entry (root when zero).
	UID, GID int
}

// Spec is what a Dockerfile's final stage says: the files it copies and the config.
type Spec struct {
	Files      []File
	User       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	Labels     map[string]string
	// OS and Architecture of the image; default linux and amd64.
	OS, Architecture string
}

// epoch is the time of every entry and of the image config, for reproducible digests.
var epoch = time.Unix(0, 0).UTC()

// Build makes a one-layer image from s.
func Build(s Spec) (v1.Image, error) {
	layerTar, err := layerTar(s.Files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return withLayer(s, layer)
}

// BuildWithLayerCache is Build with the compressed layer kept in dir under the SHA-256
// of its uncompressed tar: a second build of the same files, in this process or another,
// reads the compressed layer instead of compressing it again (twice: once for its digest,
// once to upload it). For the test bench, whose processes each push the same few hundred
// megabytes; a release image is built by Build.
func BuildWithLayerCache(s Spec, dir string) (v1.Image, error) {
	layerTar, err := layerTar(s.Files)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(layerTar)
	file := filepath.Join(dir, hex.EncodeToString(sum[:])+".tar.gz")
	if _, err := os.Stat(file); err != nil {
		if err := writeGzipFile(file, layerTar); err != nil {
			return nil, fmt.Errorf("layer cache: %w", err)
		}
	}
	// The opener's content is gzip: tarball takes it as the compressed layer as is.
	layer, err := tarball.LayerFromFile(file, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return withLayer(s, layer)
}

// writeGzipFile writes data gzip-compressed to file, atomically (a temporary file in
// the same directory renamed into place), so a concurrent reader sees all or nothing.
func writeGzipFile(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".layer-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	zw, err := gzip.NewWriterLevel(tmp, gzip.BestSpeed)
	if err != nil {
		tmp.Close()
		return err
	}
	if _, err := zw.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(zw.Close(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// withLayer is the image of s with layer as its single layer.
func withLayer(s Spec, layer v1.Layer) (v1.Image, error) {
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "ociimage.Build"},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = orDefault(s.OS, "linux")
	cfg.Architecture = orDefault(s.Architecture, "amd64")
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.User = s.User
	cfg.Config.Entrypoint = s.Entrypoint
	cfg.Config.Cmd = s.Cmd
	cfg.Config.Env = s.Env
	cfg.Config.WorkingDir = s.WorkingDir
	cfg.Config.Labels = s.Labels
	return mutate.ConfigFile(img, cfg)
}

// layerTar writes the files as an uncompressed tar, parents first, with every missing
// parent directory added (root-owned, 0755), as `COPY` into an empty image creates them.
func layerTar(files []File) ([]byte, error) {
	entries := map[string]File{}
	for _, f := range files {
		p := path.Clean(f.Path)
		if !path.IsAbs(f.Path) || p == "/" {
			return nil, fmt.Errorf("image path %q must be absolute and not /", f.Path)
		}
		if f.Dir != (f.Source == "") {
			return nil, fmt.Errorf("%s: a directory has no source and a file needs one", f.Path)
		}
		if _, dup := entries[p]; dup {
			return nil, fmt.Errorf("%s is listed twice", p)
		}
		f.Path = p
		entries[p] = f
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if _, ok := entries[dir]; !ok {
				entries[dir] = File{Path: dir, Dir: true, Mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for p := range entries {
		names = append(names, p)
	}
	slices.Sort(names) // a parent sorts before its children

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range names {
		if err := writeEntry(tw, entries[p]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, f File) error {
	hdr := &tar.Header{
		Name: strings.TrimPrefix(f.Path, "/"), Mode: int64(f.Mode.Perm()),
		Uid: f.UID, Gid: f.GID, ModTime: epoch, Format: tar.FormatPAX,
	}
	if f.Mode&os.ModeSticky != 0 {
		hdr.Mode |= 0o1000 // tar's sticky bit (c_ISVTX), e.g. for /tmp
	}
	if f.Dir {
		hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		return tw.WriteHeader(hdr)
	}
	data, err := os.ReadFile(f.Source)
	if err != nil {
		return err
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = tw.Write(data)
	return err
}

// ErrNotStatic is returned by CheckStatic for a dynamically linked executable, which an
// image with no C library (FROM scratch) cannot run.
var ErrNotStatic = errors.New("executable is dynamically linked")

// CheckStatic reports whether the ELF executable at p needs no dynamic loader.
func CheckStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s: %w (build it with CGO_ENABLED=0)", p, ErrNotStatic)
		}
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
