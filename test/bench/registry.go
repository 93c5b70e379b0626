package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/etcd-operator/etcd-operator/test/bench/images"
)

// sandboxImage is the pod sandbox (pause) image containerd runs for every pod.
const sandboxImage = images.PauseImage

// processRegistry is the bench's image registry on controlPlaneIP:registryPort, started
// once per process with every image pushed (the operator built from this checkout, etcd
// of every cached version, pause, CoreDNS): pushing compresses a few hundred megabytes,
// which a process pays once however many benches it starts. Nodes pull from it through
// containerd's mirror, so pods name images as users do (quay.io/coreos/etcd:v3.6.16).
var processRegistry = sync.OnceValues(func() (*images.Registry, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", controlPlaneIP, registryPort))
	if err != nil {
		return nil, err
	}
	reg, err := images.Serve(l, images.RegistryOptions{})
	if err != nil {
		return nil, err
	}
	root, err := images.RepoRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "bench-operator-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	op, err := images.BuildOperator(root, tmp)
	if err != nil {
		return nil, err
	}
	if _, err := (images.Set{RepoRoot: root, Operator: op}).Push(reg.Addr()); err != nil {
		return nil, err
	}
	return reg, nil
})

// processOLMImages pushes OLM's images (images.PushOLM) to the process's registry once,
// for the first bench with Options.OLM: benches without OLM never pay for them.
var processOLMImages = sync.OnceValue(func() error {
	reg, err := processRegistry()
	if err != nil {
		return err
	}
	_, err = images.PushOLM(reg.Addr(), "")
	return err
})

// startRegistry makes sure the process's registry serves every image the bench needs.
func (b *Bench) startRegistry(ctx context.Context) error {
	t0 := time.Now()
	if _, err := processRegistry(); err != nil {
		return err
	}
	if b.opts.OLM {
		if err := processOLMImages(); err != nil {
			return fmt.Errorf("OLM images: %w", err)
		}
	}
	b.opts.Log("bench: images ready in %v", time.Since(t0).Round(time.Millisecond))
	return nil
}

// PushImage makes the bench's registry serve img as name, the name pods use (e.g.
// bench.local/etcd-operator-catalog:v0.2.0 or etcd-operator:v0.1.0), for images a test
// builds itself. The registry is the process's: the image stays for later benches of
// the process, and pushing a name again replaces it.
func (b *Bench) PushImage(name string, img v1.Image) error {
	reg, err := processRegistry()
	if err != nil {
		return err
	}
	return images.PushImage(reg.Addr(), name, img)
}

// RegistryAddr is the bench registry's host:port (plain HTTP), reachable from the
// bench's namespaces and every node: what a user pushes to and names in images that
// should come from the bench, e.g. RegistryAddr()+"/etcd-operator-bundle:v0.2.0".
func (b *Bench) RegistryAddr() string {
	return fmt.Sprintf("%s:%d", controlPlaneIP, registryPort)
}
