package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/hack/catalog/olmimage"
	"github.com/etcd-operator/etcd-operator/hack/runbundle/olmrun"
	"github.com/etcd-operator/etcd-operator/internal/ociimage"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
	"github.com/etcd-operator/etcd-operator/test/bench/olm"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// Images of the OLM test. Bundles and the catalog live under the bench-only host; the
// operators keep the names their CSVs give them.
const (
	realBundle010     = images.BenchHost + "/etcd-operator-bundle:v0.1.0"
	realBundle020     = images.BenchHost + "/etcd-operator-bundle:v0.2.0"
	realCatalogImage  = images.BenchHost + "/etcd-operator-catalog:v0.2.0"
	realOperator010   = "etcd-operator:v0.1.0"
	olmCatalogName    = "etcd-operator-catalog"
	olmOperatorsNS    = "operators" // OLM's namespace for AllNamespaces installs
	olmGlobalGroup    = "global-operators"
	olmPackage        = "etcd-operator"
	olmCSV010         = "etcd-operator.v0.1.0"
	olmCSV020         = "etcd-operator.v0.2.0"
	olmWait           = 5 * time.Minute
	olmPollInterval   = time.Second
	olmClusterName    = "olm-upgrade"
	olmClusterKeys    = 200
	olmClusterKeyBase = "before-upgrade"
	olmV1Cluster      = "olm-v1" // created as v1 after the upgrade
)

// TestOLMCatalogInstallAndUpgrade installs OLM as upstream does and the operator from a
// file-based catalog through a Subscription, as a user installing from OperatorHub
// would: CatalogSource (grpc, a catalog image built by hack/catalog) → the global
// AllNamespaces OperatorGroup → Subscription to alpha starting at the released 0.1.0
// with manual approval → approve → CSV 0.1.0 Succeeded → a 3-member cluster with data
// under a write load → approve the upgrade to 0.2.0 → CSV 0.2.0 Succeeded. The etcd
// cluster must never lose a member, a pod or an acknowledged key, must still be
// reconciled (scaled) by 0.2.0, and both API versions must be served through the
// conversion webhook with the certificate OLM issued. Uninstalling (deleting the
// Subscription and the CSV) then leaves the clusters running.
//
// 0.1.0 runs the operator it was released with: its bundle names etcd-operator:v0.1.0,
// which the test builds from the commit that released it (images.ReleasedCommit) and
// pushes under that name; 0.2.0 runs this checkout's (the bench's etcd-operator:v0.2.0).
func TestOLMCatalogInstallAndUpgrade(t *testing.T) {
	root := framework.RepoRoot(t)
	t0 := time.Now()
	built := olmTestImages(t, root)
	t.Logf("olm: bundle, catalog and 0.1.0 operator images built in %v", time.Since(t0).Round(time.Millisecond))

	s := framework.NewScheme()
	utilruntime.Must(etcdv1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	b := bench.NewForTest(t, bench.Options{Scheme: s, OLM: true, Log: t.Logf})
	c := b.Client()
	ctx := context.Background()
	t.Cleanup(func() {
		if t.Failed() {
			logOLMState(t, b)
		}
	})
	for name, img := range built {
		if err := b.PushImage(name, img); err != nil {
			t.Fatalf("push %s: %v", name, err)
		}
	}

	t0 = time.Now()
	if err := olm.Install(ctx, c, olm.Options{Logf: t.Logf}); err != nil {
		t.Fatalf("install OLM: %v", err)
	}
	t.Logf("olm: OLM installed in %v", time.Since(t0).Round(time.Millisecond))

	// The global OperatorGroup upstream's install makes is AllNamespaces (no target
	// namespaces, no selector): the install mode the 0.2.0 bundle supports alone.
	og := olmObject("OperatorGroup", "v1", olmOperatorsNS, olmGlobalGroup)
	if err := c.Get(ctx, client.ObjectKeyFromObject(og), og); err != nil {
		t.Fatalf("OLM's global OperatorGroup: %v", err)
	}
	if targets, _, _ := unstructured.NestedStringSlice(og.Object, "spec", "targetNamespaces"); len(targets) > 0 {
		t.Fatalf("%s targets %v, want all namespaces", olmGlobalGroup, targets)
	}

	t0 = time.Now()
	createYAML(t, c, `apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: `+olmCatalogName+`, namespace: olm}
spec:
  sourceType: grpc
  image: `+realCatalogImage+`
  displayName: etcd-operator (bench)
  grpcPodConfig: {securityContextConfig: restricted}
`)
	createYAML(t, c, `apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: `+olmPackage+`, namespace: `+olmOperatorsNS+`}
spec:
  name: `+olmPackage+`
  channel: alpha
  source: `+olmCatalogName+`
  sourceNamespace: olm
  startingCSV: `+olmCSV010+`
  installPlanApproval: Manual
`)
	approveAndWaitCSV(t, c, olmCSV010)
	t.Logf("olm: %s Succeeded %v after the Subscription", olmCSV010, time.Since(t0).Round(time.Millisecond))
	wantOperatorImage(t, c, olmOperatorsNS, realOperator010)

	e := framework.Attach(t, b)
	e.Create(newCluster(olmClusterName, 3))
	e.WaitAvailable(olmClusterName, 3, 3*time.Minute)
	writeKeys(e, e.EtcdClient(olmClusterName), olmClusterKeys, olmClusterKeyBase, "v")
	before := memberSnapshot(t, e, olmClusterName)
	watch := watchMembers(e, olmClusterName, before.ids)
	load := e.StartLoad(olmClusterName, 20)
	if err := load.WaitAcked(50, time.Minute); err != nil {
		t.Fatal(err)
	}

	t0 = time.Now()
	approveAndWaitCSV(t, c, olmCSV020)
	t.Logf("olm: upgraded to %s in %v after approval", olmCSV020, time.Since(t0).Round(time.Millisecond))
	wantOperatorImage(t, c, olmOperatorsNS, images.DefaultOperatorImage)
	wantBundleNetworkPolicy(t, c)
	waitCSVGone(t, c, olmCSV010)
	// Let the new operator reconcile the cluster under load before judging it.
	e.WaitAvailable(olmClusterName, 3, 3*time.Minute)
	if err := load.WaitAcked(50, time.Minute); err != nil {
		t.Fatal(err)
	}
	// No acknowledged write lost and none failed across the upgrade.
	verifyLoad(t, load)
	if changes := watch.stop(); len(changes) > 0 {
		t.Errorf("etcd's members changed during the upgrade: %v", changes)
	}
	if after := memberSnapshot(t, e, olmClusterName); !slices.Equal(after.ids, before.ids) || !after.samePods(before) {
		t.Errorf("members before the upgrade %+v, after %+v: want the same members and pods, none restarted", before, after)
	}
	readKeys(t, e, olmClusterName)

	checkConversionThroughOLM(t, e)

	// 0.2.0 still reconciles the cluster 0.1.0 created: scale it up and down.
	e.Update(olmClusterName, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
	e.WaitAvailable(olmClusterName, 4, 3*time.Minute)
	e.Update(olmClusterName, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 3 })
	e.WaitAvailable(olmClusterName, 3, 3*time.Minute)
	readKeys(t, e, olmClusterName)

	uninstallKeepsClusters(t, e)
}

// wantBundleNetworkPolicy: OLM created the operator pod's NetworkPolicy that the 0.2.0
// bundle ships (0.1.0's had none), selecting the operator's pods.
func wantBundleNetworkPolicy(t *testing.T, c client.Client) {
	t.Helper()
	var np networkingv1.NetworkPolicy
	framework.Eventually(t, olmWait, "the bundle's NetworkPolicy", func() error {
		return c.Get(context.Background(), client.ObjectKey{Namespace: olmOperatorsNS, Name: "etcd-operator-controller-manager"}, &np)
	})
	if np.Spec.PodSelector.MatchLabels["control-plane"] != "etcd-operator" {
		t.Errorf("the bundle's NetworkPolicy selects %v, want the operator's pods (control-plane=etcd-operator)", np.Spec.PodSelector)
	}
}

// uninstallKeepsClusters deletes the Subscription and the CSV, as uninstalling from
// OLM does: OLM removes the operator's Deployment, but the CRDs and the etcd clusters
// (the user's data) stay, untouched and serving.
func uninstallKeepsClusters(t *testing.T, e *framework.Env) {
	t.Helper()
	ctx := context.Background()
	// The scale-down's removed member is out of etcd before its pod is gone.
	framework.Eventually(t, time.Minute, "only the 3 members' pods", func() error {
		if pods := e.MemberPods(olmClusterName); len(pods) != 3 {
			return fmt.Errorf("%d pods", len(pods))
		}
		return nil
	})
	before := memberSnapshot(t, e, olmClusterName)
	for _, u := range []*unstructured.Unstructured{
		olmObject("Subscription", "v1alpha1", olmOperatorsNS, olmPackage),
		olmObject("ClusterServiceVersion", "v1alpha1", olmOperatorsNS, olmCSV020),
	} {
		if err := e.C.Delete(ctx, u); err != nil {
			t.Fatalf("delete %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	t0 := time.Now()
	framework.Eventually(t, olmWait, "the operator's pods gone after uninstall", func() error {
		var pods corev1.PodList
		if err := e.C.List(ctx, &pods, client.InNamespace(olmOperatorsNS)); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left, e.g. %s", len(pods.Items), pods.Items[0].Name)
		}
		return nil
	})
	t.Logf("olm: uninstalled (operator pods gone) %v after deleting the Subscription and CSV", time.Since(t0).Round(time.Millisecond))
	var crd apiextensionsv1.CustomResourceDefinition
	if err := e.C.Get(ctx, client.ObjectKey{Name: "etcdclusters.etcd.database.coreos.com"}, &crd); err != nil {
		t.Fatalf("the CRD after uninstall: %v", err)
	}
	if after := memberSnapshot(t, e, olmClusterName); !slices.Equal(after.ids, before.ids) || !after.samePods(before) {
		t.Errorf("members before uninstall %+v, after %+v: want them untouched", before, after)
	}
	readKeys(t, e, olmClusterName)
	// Without the operator there is no converter: say what the CRD and a v1 read are now.
	var asV1 etcdv1.EtcdCluster
	err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: olmClusterName}, &asV1)
	t.Logf("olm: after uninstall, etcdclusters conversion %+v; reading %s as v1: size %d, err=%v",
		crd.Spec.Conversion, olmClusterName, asV1.Spec.Size, err)
	for _, name := range []string{olmClusterName, olmV1Cluster} {
		if c := e.Cluster(name); c.DeletionTimestamp != nil {
			t.Errorf("%s is being deleted after uninstall", name)
		}
	}
}

// olmTestImages is buildOLMTestImages, built once per process: the OLM tests share
// them, and building the 0.1.0 operator from its commit takes a while.
func olmTestImages(t *testing.T, root string) map[string]v1.Image {
	t.Helper()
	builtOLMImages.Lock()
	defer builtOLMImages.Unlock()
	if builtOLMImages.m == nil {
		builtOLMImages.m = buildOLMTestImages(t, root)
	}
	return builtOLMImages.m
}

var builtOLMImages struct {
	sync.Mutex
	m map[string]v1.Image
}

// buildOLMTestImages builds, before any bench runs, what the bench does not serve by
// itself: both bundle images, the catalog of both, and the released 0.1.0 operator.
func buildOLMTestImages(t *testing.T, root string) map[string]v1.Image {
	t.Helper()
	opmDir := filepath.Join(testenv.CacheDir(), "opm-"+images.OPMVersion)
	testenv.Require(t, filepath.Join("opm-"+images.OPMVersion, ".done"))
	released := filepath.Join(root, "hack", "bundle", "released", "0.1.0")
	out := map[string]v1.Image{}
	build := func(name string, spec ociimage.Spec, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		img, err := ociimage.Build(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = img
	}
	spec, err := olmimage.BundleSpec(released)
	build(realBundle010, spec, err)
	spec, err = olmimage.BundleSpec(filepath.Join(root, "bundle"))
	build(realBundle020, spec, err)
	_, catalog, err := olmimage.BuildCatalog(opmDir, olmimage.Catalog{Channel: "alpha", Bundles: []olmimage.Bundle{
		{Dir: released, Image: realBundle010},
		{Dir: filepath.Join(root, "bundle"), Image: realBundle020},
	}}, t.TempDir())
	if err != nil {
		t.Fatalf("the catalog image: %v", err)
	}
	out[realCatalogImage] = catalog

	// The 0.1.0 operator is built from the commit that released it. A shallow clone has
	// no such commit; standing this checkout's operator in for it would test an upgrade
	// from HEAD to HEAD, so the test does not run there (and fails under CI, whose
	// .ci/run fetches the history).
	commit, err := images.ReleasedCommit(root, "0.1.0")
	var bin string
	switch {
	case errors.Is(err, images.ErrShallow):
		testenv.Missing(t, "olm: %v", err)
	case err != nil:
		t.Fatalf("the 0.1.0 operator's source: %v", err)
	default:
		if bin, err = images.BuildOperatorAt(root, commit, t.TempDir()); err != nil {
			t.Fatalf("build the 0.1.0 operator at %s: %v", commit, err)
		}
	}
	ca := "/etc/ssl/certs/ca-certificates.crt"
	if _, err := os.Stat(ca); err != nil {
		ca = os.DevNull
	}
	build(realOperator010, ociimage.OperatorSpec(bin, ca), nil)
	t.Logf("olm: 0.1.0 operator built from %.12s", commit)
	return out
}

// olmObject is an empty OLM object of kind in operators.coreos.com/version.
func olmObject(kind, version, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "operators.coreos.com", Version: version, Kind: kind})
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func createYAML(t *testing.T, c client.Client, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// approveAndWaitCSV approves the InstallPlan the Subscription references for csv and
// waits for the CSV to succeed, as a user following the README would (the loop `make
// run-bundle` uses: it follows the Subscription's reference, so a plan OLM regenerates
// after the first approval is approved too).
func approveAndWaitCSV(t *testing.T, c client.Client, csv string) {
	t.Helper()
	if err := olmrun.ApproveAndWait(context.Background(), c, olmOperatorsNS, olmPackage, csv, olmWait, t.Logf); err != nil {
		t.Fatal(err)
	}
}

// waitCSVGone waits until OLM has removed the replaced CSV (after the new one succeeded).
func waitCSVGone(t *testing.T, c client.Client, csv string) {
	t.Helper()
	framework.Eventually(t, olmWait, csv+" removed after the upgrade", func() error {
		u := olmObject("ClusterServiceVersion", "v1alpha1", olmOperatorsNS, csv)
		err := c.Get(context.Background(), client.ObjectKeyFromObject(u), u)
		if err == nil {
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			return fmt.Errorf("still there, phase %q", phase)
		}
		return client.IgnoreNotFound(err)
	})
}

// wantOperatorImage waits until the operator pods in ns are exactly ready pods of image:
// the CSV's Deployment rolled out, the old one's pods gone. Only a Deployment's pods
// (owned by a ReplicaSet) count: a catalog's registry pod and OLM's bundle-unpack job
// pods may share the namespace.
func wantOperatorImage(t *testing.T, c client.Client, ns, image string) {
	t.Helper()
	framework.Eventually(t, 3*time.Minute, "the operator running "+image, func() error {
		var pods corev1.PodList
		if err := c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		ready := 0
		for _, p := range pods.Items {
			if owner := metav1.GetControllerOf(&p); owner == nil || owner.Kind != "ReplicaSet" {
				continue
			}
			img := p.Spec.Containers[0].Image
			seen = append(seen, p.Name+"="+img)
			if img != image {
				return fmt.Errorf("pods %v", seen)
			}
			if framework.PodReady(&p) {
				ready++
			}
		}
		if ready == 0 {
			return fmt.Errorf("no ready operator pod: %v", seen)
		}
		return nil
	})
}

// members is a cluster's etcd member IDs and its pods (name → UID and restarts).
type members struct {
	ids  []uint64
	pods map[string]string
}

func memberSnapshot(t *testing.T, e *framework.Env, name string) members {
	t.Helper()
	ms, err := e.Members(name)
	if err != nil {
		t.Fatalf("member list of %s: %v", name, err)
	}
	var m members
	for id := range framework.MemberIDs(ms) {
		m.ids = append(m.ids, id)
	}
	slices.Sort(m.ids)
	m.pods = map[string]string{}
	for n, p := range e.MemberPods(name) {
		restarts := int32(0)
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		m.pods[n] = fmt.Sprintf("%s/restarts=%d", p.UID, restarts)
	}
	return m
}

func (m members) samePods(o members) bool {
	if len(m.pods) != len(o.pods) {
		return false
	}
	for n, v := range m.pods {
		if o.pods[n] != v {
			return false
		}
	}
	return true
}

// memberWatch polls etcd's member list and records every list that differs from want.
type memberWatch struct {
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	changes []string
}

func watchMembers(e *framework.Env, name string, want []uint64) *memberWatch {
	w := &memberWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			ms, err := e.Members(name)
			if err != nil {
				continue // a member briefly unreachable is not a membership change
			}
			var ids []uint64
			for id := range framework.MemberIDs(ms) {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, want) {
				w.mu.Lock()
				w.changes = append(w.changes, fmt.Sprintf("%s: %x", time.Now().Format(time.TimeOnly), ids))
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *memberWatch) stop() []string {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes
}

// readKeys checks every key written before the upgrade is there with its value.
func readKeys(t *testing.T, e *framework.Env, name string) {
	t.Helper()
	cli := e.EtcdClient(name)
	e.Eventually(30*time.Second, "keys from before the upgrade", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, olmClusterKeyBase+"/", clientv3.WithPrefix())
		if err != nil {
			return err
		}
		if len(resp.Kvs) != olmClusterKeys {
			return fmt.Errorf("%d keys, want %d", len(resp.Kvs), olmClusterKeys)
		}
		for _, kv := range resp.Kvs {
			i := strings.TrimPrefix(string(kv.Key), olmClusterKeyBase+"/")
			var n int
			if _, err := fmt.Sscanf(i, "%04d", &n); err != nil || string(kv.Value) != fmt.Sprintf("v%d", n) {
				t.Errorf("key %s = %q", kv.Key, kv.Value)
			}
		}
		return nil
	})
}

// checkConversionThroughOLM reads the cluster in v1 and v1beta2 (the API server converts
// between them through the operator's webhook) and checks the webhook is the one OLM
// wired: the CRD's conversion names the operator's Service in olmOperatorsNS with a CA
// bundle OLM injected, and a v1 object created now round-trips too.
func checkConversionThroughOLM(t *testing.T, e *framework.Env) {
	t.Helper()
	ctx := context.Background()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := e.C.Get(ctx, client.ObjectKey{Name: "etcdclusters.etcd.database.coreos.com"}, &crd); err != nil {
		t.Fatal(err)
	}
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil ||
		conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil ||
		conv.Webhook.ClientConfig.Service.Namespace != olmOperatorsNS || len(conv.Webhook.ClientConfig.CABundle) == 0 {
		t.Fatalf("etcdclusters conversion is not OLM's webhook: %+v", conv)
	}
	t.Logf("olm: conversion webhook %s/%s, CA bundle of %d bytes", conv.Webhook.ClientConfig.Service.Namespace,
		conv.Webhook.ClientConfig.Service.Name, len(conv.Webhook.ClientConfig.CABundle))

	var old etcdv1.EtcdCluster
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: olmClusterName}, &old); err != nil {
		t.Fatalf("read the 0.1.0 cluster as v1: %v", err)
	}
	if old.Spec.Size == 0 {
		t.Errorf("v1 view of the cluster has no size: %+v", old.Spec)
	}
	const v1Name = olmV1Cluster
	created := &etcdv1.EtcdCluster{}
	created.Name, created.Namespace = v1Name, "default"
	created.Spec.Size = 1
	created.Spec.Version = "3.6.16"
	if err := e.C.Create(ctx, created); err != nil {
		t.Fatalf("create a v1 EtcdCluster: %v", err)
	}
	var asBeta etcdv1beta2.EtcdCluster
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: v1Name}, &asBeta); err != nil {
		t.Fatalf("read the v1 cluster as v1beta2: %v", err)
	}
	if asBeta.Spec.Size != 1 || asBeta.Spec.Version != "3.6.16" {
		t.Errorf("v1beta2 view of the v1 cluster: %+v", asBeta.Spec)
	}
	e.WaitAvailable(v1Name, 1, 3*time.Minute)
}

// logOLMState logs what a failed OLM step leaves: CSVs, Subscription and InstallPlans,
// and the pods of olm and olmOperatorsNS with the tail of the operator's log.
func logOLMState(t *testing.T, b *bench.Bench, namespaces ...string) {
	ctx := context.Background()
	c := b.Client()
	for _, kind := range []string{"ClusterServiceVersion", "Subscription", "InstallPlan", "CatalogSource"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: kind + "List"})
		if err := c.List(ctx, list); err != nil {
			t.Logf("list %s: %v", kind, err)
			continue
		}
		for _, u := range list.Items {
			st, _ := yaml.Marshal(u.Object["status"])
			if len(st) > 3000 {
				st = st[:3000]
			}
			t.Logf("%s %s/%s status:\n%s", kind, u.GetNamespace(), u.GetName(), st)
		}
	}
	for _, ns := range append([]string{"olm", olmOperatorsNS}, namespaces...) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			continue
		}
		for _, p := range pods.Items {
			t.Logf("pod %s/%s %s %+v", ns, p.Name, p.Status.Phase, p.Status.ContainerStatuses)
		}
	}
	logOperatorPods(t, b, olmOperatorsNS)
}
