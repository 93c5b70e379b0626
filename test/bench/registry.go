package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

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

// startRegistry makes sure the process's registry serves every image.
func (b *Bench) startRegistry(ctx context.Context) error {
	t0 := time.Now()
	if _, err := processRegistry(); err != nil {
		return err
	}
	b.opts.Log("bench: images ready in %v", time.Since(t0).Round(time.Millisecond))
	return nil
}

func (b *Bench) hasMounts() bool {
	mps, err := mountPoints(b.dir)
	return err != nil || len(mps) > 0
}
