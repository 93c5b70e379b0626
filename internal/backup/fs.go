package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// sidecarSuffix names the file next to each backup that holds its checksum and metadata.
const sidecarSuffix = ".meta.json"

// tmpPrefix marks files being written; List ignores them.
const tmpPrefix = ".tmp-"

// FS is a Store in a directory, e.g. the mount point of a PersistentVolumeClaim. Keys
// are slash-separated paths below the directory.
type FS struct{ root string }

// NewFS creates the store; root must exist.
func NewFS(root string) (*FS, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("backup directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("backup directory %s is not a directory", root)
	}
	return &FS{root: root}, nil
}

func (f *FS) String() string { return "file://" + f.root }

// sidecar is the JSON content of a sidecar file.
type sidecar struct {
	SHA256      string            `json:"sha256"`
	Size        int64             `json:"size"`
	Compression Compression       `json:"compression,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

func (f *FS) path(key string) (string, error) {
	clean := filepath.Clean("/" + key)
	if key == "" || clean == "/" || strings.HasSuffix(key, "/") || strings.HasSuffix(clean, sidecarSuffix) ||
		strings.HasPrefix(filepath.Base(clean), tmpPrefix) {
		return "", fmt.Errorf("invalid backup key %q", key)
	}
	return filepath.Join(f.root, clean), nil
}

// Put writes the data and the sidecar to temporary files, syncs them, then renames the
// sidecar and the data into place: a crash leaves either the old backup or a complete
// new one (or a stray temporary file), never a truncated file under the key.
func (f *FS) Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (Object, error) {
	p, err := f.path(key)
	if err != nil {
		return Object{}, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return Object{}, err
	}
	enc, err := newEncoder(r, opts.Compression)
	if err != nil {
		return Object{}, err
	}
	defer enc.close()
	tmp, err := os.CreateTemp(filepath.Dir(p), tmpPrefix)
	if err != nil {
		return Object{}, err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, ctxReader{ctx, enc})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Object{}, fmt.Errorf("write %s/%s: %w", f, key, err)
	}
	sc := sidecar{SHA256: enc.sum(), Size: enc.n, Compression: opts.Compression, Metadata: opts.Metadata}
	if err := writeFileAtomic(p+sidecarSuffix, sc); err != nil {
		return Object{}, fmt.Errorf("write checksum of %s/%s: %w", f, key, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return Object{}, err
	}
	if d, err := os.Open(filepath.Dir(p)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	st, _ := os.Stat(p)
	obj := Object{Key: key, Size: enc.n, SHA256: sc.SHA256, Compression: opts.Compression, Metadata: opts.Metadata}
	if st != nil {
		obj.LastModified = st.ModTime()
	}
	return obj, nil
}

func writeFileAtomic(p string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), tmpPrefix)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// Get opens the file; see Store.Get. A file without a sidecar is returned unverified
// (Object.SHA256 empty), e.g. a snapshot copied there by hand.
func (f *FS) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, Object{}, err
	}
	file, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Object{}, fmt.Errorf("read %s/%s: %w", f, key, ErrNotFound)
	}
	if err != nil {
		return nil, Object{}, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, Object{}, err
	}
	obj := Object{Key: key, Size: st.Size(), LastModified: st.ModTime()}
	if b, err := os.ReadFile(p + sidecarSuffix); err == nil {
		var sc sidecar
		if err := json.Unmarshal(b, &sc); err != nil {
			file.Close()
			return nil, Object{}, fmt.Errorf("checksum file of %s/%s: %w", f, key, err)
		}
		obj.SHA256, obj.Compression, obj.Metadata = sc.SHA256, sc.Compression, sc.Metadata
	} else if !errors.Is(err, fs.ErrNotExist) {
		file.Close()
		return nil, Object{}, err
	}
	rc, err := newDecoder(struct {
		io.Reader
		io.Closer
	}{ctxReader{ctx, file}, file}, obj, f.String()+"/"+key)
	if err != nil {
		return nil, Object{}, err
	}
	return rc, obj, nil
}

// List walks the directory for files whose key starts with prefix.
func (f *FS) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	err := filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		name := d.Name()
		if d.IsDir() || strings.HasSuffix(name, sidecarSuffix) || strings.HasPrefix(name, tmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(f.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, Object{Key: key, Size: info.Size(), LastModified: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", f, err)
	}
	return out, nil
}

// Delete removes the file and its sidecar.
func (f *FS) Delete(ctx context.Context, key string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	for _, q := range []string{p, p + sidecarSuffix} {
		if err := os.Remove(q); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ctxReader stops a local copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
