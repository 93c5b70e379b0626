package olmimage

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// Layout of a catalog image, as upstream's catalog images (built FROM the opm image)
// have it: catalog-operator runs the image's default command and probes it with
// grpc_health_probe found on PATH.
const (
	// ConfigsDir holds the file-based catalog; ConfigsLabel tells OLM where it is.
	ConfigsDir   = "/configs"
	ConfigsLabel = "operators.operatorframework.io.index.configs.v1"
	// CacheDir is opm serve's cache, built into the image so the pod serves at once.
	CacheDir = "/tmp/cache"
	// User is the opm image's user. opm serve takes a lock file in CacheDir, so the
	// cache must be this user's: a root-owned one crash-loops the pod with
	// "creating lock file: permission denied".
	User = 1001
	// OPMBinary is the entrypoint.
	OPMBinary = "/bin/opm"
	// searchPath is the PATH of the distroless base upstream's opm image starts from.
	searchPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// CatalogSpec lays out the catalog image serving fbc (Render's output) of package pkg:
// the opm image's files (opmDir holds opm and grpc_health_probe, hack/tools.sh olm),
// the catalog at ConfigsDir/pkg/catalog.yaml and the cache `opm serve --cache-only`
// builds from it, owned by User. work is a scratch directory the image's files are read
// from, so it must live until ociimage.Build has run. The catalog is checked with
// `opm validate` first.
func CatalogSpec(opmDir, pkg string, fbc []byte, work string) (ociimage.Spec, error) {
	opm := filepath.Join(opmDir, "opm")
	configs := filepath.Join(work, "configs")
	cache := filepath.Join(work, "cache")
	if err := os.MkdirAll(filepath.Join(configs, pkg), 0o755); err != nil {
		return ociimage.Spec{}, err
	}
	if err := os.WriteFile(filepath.Join(configs, pkg, "catalog.yaml"), fbc, 0o644); err != nil {
		return ociimage.Spec{}, err
	}
	if err := runOPM(opm, "validate", configs); err != nil {
		return ociimage.Spec{}, err
	}
	// No pprof endpoint: its fixed default port makes concurrent builds fail.
	if err := runOPM(opm, "serve", configs, "--cache-dir="+cache, "--cache-only", "--pprof-addr="); err != nil {
		return ociimage.Spec{}, err
	}
	files := []ociimage.File{
		{Path: OPMBinary, Source: opm, Mode: 0o755},
		{Path: "/bin/grpc_health_probe", Source: filepath.Join(opmDir, "grpc_health_probe"), Mode: 0o755},
		{Path: "/tmp", Dir: true, Mode: 0o777 | os.ModeSticky},
	}
	for _, f := range files {
		if !f.Dir {
			if err := ociimage.CheckStatic(f.Source); err != nil {
				return ociimage.Spec{}, err
			}
		}
	}
	tree, err := treeFiles(configs, ConfigsDir, 0)
	if err != nil {
		return ociimage.Spec{}, err
	}
	files = append(files, tree...)
	if tree, err = treeFiles(cache, CacheDir, User); err != nil {
		return ociimage.Spec{}, err
	}
	files = append(files, tree...)
	return ociimage.Spec{
		Files:      files,
		User:       fmt.Sprint(User),
		Env:        []string{searchPath},
		Entrypoint: []string{OPMBinary},
		Cmd:        []string{"serve", ConfigsDir, "--cache-dir=" + CacheDir},
		Labels:     map[string]string{ConfigsLabel: ConfigsDir},
	}, nil
}

// treeFiles lists dir and everything below it as image entries under at, owned by uid
// (and its group); directories 0755, files 0644.
func treeFiles(dir, at string, uid int) ([]ociimage.File, error) {
	var files []ociimage.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f := ociimage.File{Path: filepath.ToSlash(filepath.Join(at, rel)), UID: uid, GID: uid}
		switch {
		case d.IsDir():
			f.Dir, f.Mode = true, 0o755
		case d.Type().IsRegular():
			f.Source, f.Mode = p, 0o644
		default:
			return fmt.Errorf("%s: neither a file nor a directory", p)
		}
		files = append(files, f)
		return nil
	})
	return files, err
}

func runOPM(opm string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(opm, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("opm %s: %w\n%s", args[0], err, out.Bytes())
	}
	return nil
}

// BuildCatalog renders c with opm from opmDir (Render) and builds the catalog image
// serving it (CatalogSpec, ociimage.Build). work is a scratch directory the image's files
// are laid out in; it may be removed once this returns, as the image holds its own copy.
// It returns the rendered file-based catalog too.
func BuildCatalog(opmDir string, c Catalog, work string) (fbc []byte, img v1.Image, err error) {
	pkg, fbc, err := Render(filepath.Join(opmDir, "opm"), c)
	if err != nil {
		return nil, nil, err
	}
	spec, err := CatalogSpec(opmDir, pkg, fbc, work)
	if err != nil {
		return nil, nil, err
	}
	img, err = ociimage.Build(spec)
	if err != nil {
		return nil, nil, err
	}
	return fbc, img, nil
}
