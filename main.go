// Command etcd-operator runs the operator's controller manager. Its subcommands are also
// the programs the operator runs inside pods (a distroless etcd image has no shell), so one
// image serves both.
//
//	etcd-operator [manager flags]     run the controllers (default)
//	etcd-operator version             print the version
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "version":
			fmt.Println(version)
			return
		case "manager":
			os.Args = append(os.Args[:1], os.Args[2:]...)
		}
	}
	os.Exit(runManager(os.Args[1:]))
}

func runManager(args []string) int {
	fs := flag.NewFlagSet("manager", flag.ExitOnError)
	var (
		metricsAddr      = fs.String("metrics-bind-address", ":8080", "address the Prometheus metrics endpoint binds to; 0 disables it")
		probeAddr        = fs.String("health-probe-bind-address", ":8081", "address the health and readiness probes bind to")
		leaderElect      = fs.Bool("leader-elect", false, "elect a leader among replicas so only one acts at a time")
		leaderElectionNS = fs.String("leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace)")
		watchNamespace   = fs.String("watch-namespace", os.Getenv("WATCH_NAMESPACE"), "only manage resources in this namespace (default: all)")
		clusterDomain    = fs.String("cluster-domain", "", "DNS domain of the cluster, e.g. cluster.local (default: read from /etc/resolv.conf, else none)")
	)
	opts := zap.Options{Development: false}
	opts.BindFlags(fs)
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(etcdv1beta2.AddToScheme(scheme))

	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:  *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        "etcd-operator.etcd.database.coreos.com",
		LeaderElectionNamespace: *leaderElectionNS,
	}
	controllers.RestrictToNamespace(&mgrOpts, *watchNamespace)

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mgrOpts)
	if err != nil {
		log.Error(err, "unable to create manager")
		return 1
	}
	if err := controllers.SetupWithManager(mgr, controllers.Options{ClusterDomain: *clusterDomain}); err != nil {
		log.Error(err, "unable to set up controllers")
		return 1
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "unable to set up health check")
		return 1
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "unable to set up ready check")
		return 1
	}
	log.Info("starting manager", "version", version, "watchNamespace", *watchNamespace)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager exited with an error")
		return 1
	}
	return 0
}
