package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	clientv3 "go.etcd.io/etcd/client/v3"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	"github.com/etcd-operator/etcd-operator/hack/runbundle/olmrun"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
	"github.com/etcd-operator/etcd-operator/test/bench/olm"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// runBundleNS is where `make run-bundle` installs in this test: a namespace of its own,
// so the OperatorGroup, CatalogSource and Subscription are all run-bundle's.
const runBundleNS = "etcd-operator-run"

// TestRunBundleAndUpgrade is `make run-bundle` and `make run-bundle-upgrade` on real
// OLM: the released 0.1.0 bundle image is installed from a catalog olmrun builds and
// pushes beside it (no catalog of ours is involved), an etcd cluster is created and
// written to, then the 0.2.0 bundle image is installed over it. The cluster keeps its
// pod and its keys, is read through 0.2.0's conversion webhook, and the tool refuses a
// second install and an "upgrade" to what is installed.
func TestRunBundleAndUpgrade(t *testing.T) {
	root := framework.RepoRoot(t)
	built := olmTestImages(t, root)
	s := framework.NewScheme()
	utilruntime.Must(etcdv1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(operatorsv1.AddToScheme(s))
	b := bench.NewForTest(t, bench.Options{Scheme: s, OLM: true, Log: t.Logf})
	c := b.Client()
	ctx := context.Background()
	t.Cleanup(func() {
		if t.Failed() {
			logOLMState(t, b, runBundleNS)
		}
	})
	// The bundles go where a user pushes them, under the bench registry's own address;
	// the 0.1.0 operator under the name its CSV gives.
	reg := b.RegistryAddr()
	bundle010, bundle020 := reg+"/etcd-operator-bundle:v0.1.0", reg+"/etcd-operator-bundle:v0.2.0"
	for name, img := range map[string]string{bundle010: realBundle010, bundle020: realBundle020, realOperator010: realOperator010} {
		if err := b.PushImage(name, built[img]); err != nil {
			t.Fatalf("push %s: %v", name, err)
		}
	}
	if err := olm.Install(ctx, c, olm.Options{Logf: t.Logf}); err != nil {
		t.Fatalf("install OLM: %v", err)
	}

	o := olmrun.Options{
		Client: c, Namespace: runBundleNS, BundleImage: bundle010,
		OPMDir: filepath.Join(testenv.CacheDir(), "opm-"+images.OPMVersion), Timeout: olmWait, Logf: t.Logf,
	}
	t0 := time.Now()
	csv, err := olmrun.Run(ctx, o)
	if err != nil {
		t.Fatalf("run-bundle %s: %v", bundle010, err)
	}
	if csv != olmCSV010 {
		t.Fatalf("run-bundle installed %s, want %s", csv, olmCSV010)
	}
	t.Logf("run-bundle: %s Succeeded in %v", csv, time.Since(t0).Round(time.Millisecond))
	wantOperatorImage(t, c, runBundleNS, realOperator010)
	var og operatorsv1.OperatorGroup
	if err := c.Get(ctx, client.ObjectKey{Namespace: runBundleNS, Name: olmPackage}, &og); err != nil || len(og.Spec.TargetNamespaces) != 0 {
		t.Errorf("run-bundle's OperatorGroup: %+v, %v; want one for all namespaces", og.Spec, err)
	}
	if _, err := olmrun.Run(ctx, o); err == nil || !strings.Contains(err.Error(), "already subscribed") {
		t.Errorf("a second run-bundle: err %v, want it refused", err)
	}

	const name, keys = "run-bundle", 50
	e := framework.Attach(t, b)
	e.Create(newCluster(name, 1))
	e.WaitAvailable(name, 1, 3*time.Minute)
	writeKeys(e, e.EtcdClient(name), keys, "run-bundle", "v")
	before := memberSnapshot(t, e, name)

	o.BundleImage = bundle020
	o.CatalogImage = "" // derived from the new bundle: a catalog image of its own
	t0 = time.Now()
	if csv, err = olmrun.Upgrade(ctx, o); err != nil {
		t.Fatalf("run-bundle-upgrade %s: %v", bundle020, err)
	}
	if csv != olmCSV020 {
		t.Fatalf("run-bundle-upgrade installed %s, want %s", csv, olmCSV020)
	}
	t.Logf("run-bundle-upgrade: %s Succeeded in %v", csv, time.Since(t0).Round(time.Millisecond))
	wantOperatorImage(t, c, runBundleNS, images.DefaultOperatorImage)
	if _, err := olmrun.Upgrade(ctx, o); err == nil || !strings.Contains(err.Error(), "already installed") {
		t.Errorf("upgrading to the installed bundle again: err %v, want it refused", err)
	}

	e.WaitAvailable(name, 1, 3*time.Minute)
	if after := memberSnapshot(t, e, name); !after.samePods(before) {
		t.Errorf("member pods before the upgrade %+v, after %+v: want the same pod, not restarted", before, after)
	}
	cli := e.EtcdClient(name)
	e.Eventually(30*time.Second, "the keys from before the upgrade", func() error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, "run-bundle/", clientv3.WithPrefix())
		if err != nil {
			return err
		}
		if len(resp.Kvs) != keys {
			return fmt.Errorf("%d keys, want %d", len(resp.Kvs), keys)
		}
		return nil
	})
	// 0.2.0 serves v1 through the webhook OLM wired for it.
	e.Eventually(time.Minute, "the cluster read as v1", func() error {
		var v1c etcdv1.EtcdCluster
		return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &v1c)
	})
}
