package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	creds, err := registryLogin()
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	reg, err := images.Serve(l, images.RegistryOptions{Private: &creds})
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

// registryLogin is the process registry's login to its private repositories
// (images.PrivatePrefix), made once per process.
var registryLogin = sync.OnceValues(images.NewCredentials)

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
func (b *Bench) RegistryAddr() string { return RegistryAddress() }

// RegistryAddress is RegistryAddr before any bench exists (every bench of a process
// shares the registry), e.g. to build images naming it while the first bench starts.
func RegistryAddress() string {
	return fmt.Sprintf("%s:%d", controlPlaneIP, registryPort)
}

// PrivateImage copies image (a name as pods spell it, which the bench serves, e.g.
// quay.io/coreos/etcd:v3.6.16) to the bench registry's private repositories and returns
// the name pods pull it by (bench.local/private/coreos/etcd:v3.6.16): a pull of it
// needs the login in PullSecret, as from a registry that requires authentication.
func (b *Bench) PrivateImage(image string) (string, error) {
	reg, err := processRegistry()
	if err != nil {
		return "", err
	}
	creds, err := registryLogin()
	if err != nil {
		return "", err
	}
	return images.CopyToPrivate(reg.Addr(), creds, image)
}

// PullSecret is a kubernetes.io/dockerconfigjson Secret with the login to the bench
// registry's private images (PrivateImage), to name in imagePullSecrets.
func (b *Bench) PullSecret(namespace, name string) (*corev1.Secret, error) {
	creds, err := registryLogin()
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: creds.DockerConfigJSON()},
	}, nil
}
