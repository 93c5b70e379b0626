// Package kubectletcd is the `kubectl etcd` plugin: status, backups, restores,
// defragmentation and support bundles for the operator's EtcdClusters. It talks only to
// the Kubernetes API: objects through a controller-runtime client, logs through
// client-go, and etcdctl inside member pods through pods/exec. It reads the v1beta2
// objects (the version the operator stores and acts on), so it works on installs with
// or without the conversion webhook.
//
// It never reads a Secret's data (report asks for the metadata of the Secrets the
// objects name, to say whether they exist): what it prints or bundles cannot hold Secret
// data, and credentials found in pod specs, cluster specs, status text and logs are
// redacted (redact.go).
package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Plugin is one invocation's connection to a cluster and where it prints.
type Plugin struct {
	// C reads and writes objects; Logs reads container logs; Exec runs commands in
	// containers (pods/exec).
	C    client.Client
	Logs kubernetes.Interface
	Exec Execer
	// Namespace is the namespace the objects are in (-n, else the kubeconfig's).
	Namespace string
	Out       io.Writer
	// Now is the clock (tests set it).
	Now func() time.Time
	// Poll is how often a --wait polls.
	Poll time.Duration
}

// Execer runs a command in a container and returns what it wrote.
type Execer interface {
	Exec(ctx context.Context, namespace, pod, container string, cmd []string) (stdout, stderr []byte, err error)
}

// Scheme holds the types the plugin reads: the built-in ones and the operator's v1beta2.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(etcdv1beta2.AddToScheme(s))
	return s
}

// ConnOptions are the kubectl-style connection flags.
type ConnOptions struct {
	Kubeconfig string
	Context    string
	Namespace  string
}

// clientConfig loads the kubeconfig as kubectl does: --kubeconfig, else $KUBECONFIG,
// else ~/.kube/config (and in-cluster config when none exists), with --context and
// --namespace as overrides.
func (o ConnOptions) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	overrides.Context.Namespace = o.Namespace
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// Connect builds a Plugin for the cluster the options name.
func Connect(o ConnOptions, out io.Writer) (*Plugin, error) {
	cc := o.clientConfig()
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig namespace: %w", err)
	}
	if ns == "" {
		ns = corev1.NamespaceDefault
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-etcd"
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Plugin{C: c, Logs: cs, Exec: &podExec{cfg: cfg, cs: cs}, Namespace: ns, Out: out,
		Now: time.Now, Poll: 2 * time.Second}, nil
}
