// Command runbundle installs an operator bundle image through OLM, as `operator-sdk run
// bundle` and `operator-sdk run bundle-upgrade` do (see hack/runbundle/olmrun):
//
//	go run ./hack/runbundle run     --bundle REG/etcd-operator-bundle:v0.1.0 --namespace etcd-operator-system --opm-dir DIR
//	go run ./hack/runbundle upgrade --bundle REG/etcd-operator-bundle:v0.2.0 --namespace etcd-operator-system --opm-dir DIR
//
// The cluster is the one KUBECONFIG (or --kubeconfig) names; OLM must be installed in it.
// The catalog image is pushed beside the bundle image unless --catalog-image says where.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/hack/runbundle/olmrun"
)

const usage = "usage: runbundle run|upgrade --bundle IMAGE --opm-dir DIR [--namespace NS] [--catalog-image IMAGE] [--kubeconfig FILE] [--timeout D]"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "runbundle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "run" && args[0] != "upgrade") {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("runbundle "+args[0], flag.ContinueOnError)
	var o olmrun.Options
	fs.StringVar(&o.BundleImage, "bundle", "", "bundle image to install (required)")
	fs.StringVar(&o.Namespace, "namespace", "etcd-operator-system", "install namespace")
	fs.StringVar(&o.CatalogImage, "catalog-image", "", "where to push the catalog serving the bundle (default: <bundle repository>-run-catalog:<bundle tag>)")
	fs.StringVar(&o.OPMDir, "opm-dir", "", "directory holding opm and grpc_health_probe (bash hack/tools.sh olm; required)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for the CSV to succeed")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if o.BundleImage == "" || o.OPMDir == "" {
		return errors.New(usage)
	}
	c, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	o.Client = c
	o.Logf = func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	do := olmrun.Run
	if args[0] == "upgrade" {
		do = olmrun.Upgrade
	}
	csv, err := do(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("%s is installed in %s\n", csv, o.Namespace)
	return nil
}

func newClient(kubeconfig string) (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, operatorsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return client.New(cfg, client.Options{Scheme: s})
}
