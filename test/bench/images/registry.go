// Package images builds the container images the bench's real nodes run (etcd, the
// operator, the pod sandbox's pause, CoreDNS) from the tool cache and this repository,
// and serves them from an OCI registry inside the bench process. Nothing is pulled from
// outside: the nodes' containerd mirrors each real registry host to this registry, so
// pods keep their real image names (see MirrorRef).
package images

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an OCI distribution registry served in this process over plain HTTP, as
// containerd expects of an "http://" mirror endpoint.
type Registry struct {
	srv   *http.Server
	addr  string
	done  chan error
	close sync.Once
	err   error
}

// RegistryOptions configure Serve. The zero value keeps blobs in memory and logs nothing.
type RegistryOptions struct {
	// BlobDir keeps blobs in files under this directory instead of in memory: the full
	// set is a few hundred megabytes uncompressed, ~150 MB as stored.
	BlobDir string
	// Log receives one line per request; nil discards them.
	Log io.Writer
	// Private, when set, is the login every request for a repository under
	// PrivatePrefix needs (see requireLogin).
	Private *Credentials
}

// Serve serves a registry on l until Close. It takes ownership of l.
func Serve(l net.Listener, o RegistryOptions) (*Registry, error) {
	w := o.Log
	if w == nil {
		w = io.Discard
	}
	opts := []registry.Option{registry.Logger(log.New(w, "registry: ", log.LstdFlags))}
	if o.BlobDir != "" {
		if err := os.MkdirAll(o.BlobDir, 0o700); err != nil {
			_ = l.Close()
			return nil, err
		}
		opts = append(opts, registry.WithBlobHandler(registry.NewDiskBlobHandler(o.BlobDir)))
	}
	h := registry.New(opts...)
	if o.Private != nil {
		h = requireLogin(h, *o.Private)
	}
	r := &Registry{
		srv: &http.Server{
			Handler:  h,
			ErrorLog: log.New(w, "registry: ", log.LstdFlags),
		},
		addr: l.Addr().String(),
		done: make(chan error, 1),
	}
	go func() { r.done <- r.srv.Serve(l) }()
	return r, nil
}

// Addr is the host:port the registry listens on, the registry part of MirrorRef.
func (r *Registry) Addr() string { return r.addr }

// Close stops the server and closes open connections (a pull in flight fails). Calls
// after the first return the first one's result.
func (r *Registry) Close() error {
	r.close.Do(func() {
		r.err = r.srv.Close()
		if serr := <-r.done; !errors.Is(serr, http.ErrServerClosed) {
			r.err = errors.Join(r.err, serr)
		}
	})
	return r.err
}
