package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestHelmInstall installs the operator chart with the helm CLI, as the README tells users
// to, and walks the release's life: the chart's values.schema.json refuses a value of the
// wrong type and an unknown value before anything is created; `helm install` with
// replicaCount 2 and watchNamespace runs two replicas from the bench's operator image, a
// cluster in the watched namespace becomes Available and one in another namespace is
// never touched; deleting the leader's pod hands the lease to another replica, which acts
// on a scale-up; `helm upgrade` with a changed resource limit rolls both replicas; and
// `helm uninstall` removes the operator but keeps the CRDs, the EtcdClusters and their
// running members with their data.
func TestHelmInstall(t *testing.T) {
	root := framework.RepoRoot(t)
	helm := helmCLI(t, root)
	chart := filepath.Join(root, "helm-charts", "etcd-operator")

	s := schemeWithV1(t)
	b := bench.NewForTest(t, bench.Options{Scheme: s})
	c := b.Client()
	ctx := context.Background()
	e := framework.Attach(t, b)
	const (
		ns        = "etcd-operator-system"
		release   = "etcd-operator"
		watched   = "default" // the framework's helpers read clusters there
		unwatched = "elsewhere"
	)
	run := helmRunner(t, helm, b.Kubeconfig())
	t.Cleanup(func() {
		if t.Failed() {
			logOperatorPods(t, b, ns)
		}
	})

	// values.schema.json: a string where an integer belongs, and a misspelt value, are
	// both refused by name; nothing is created (no release record, no namespace).
	out, err := run(ctx, "install", "bad", chart, "-n", ns, "--create-namespace",
		"--set", "replicaCount=two", "--set", "replicas=2")
	if err == nil {
		t.Fatalf("helm install with replicaCount=two succeeded:\n%s", out)
	}
	for _, want := range []string{"replicaCount", "integer", "replicas", "not allowed"} {
		if !strings.Contains(out, want) {
			t.Errorf("helm's refusal does not name %q:\n%s", want, out)
		}
	}
	var releases corev1.SecretList
	if err := c.List(ctx, &releases, client.MatchingLabels{"owner": "helm"}); err != nil || len(releases.Items) != 0 {
		t.Fatalf("after a refused install: %d helm release records (%v)", len(releases.Items), err)
	}

	if out, err := run(ctx, "install", release, chart, "-n", ns, "--create-namespace",
		"--set", "replicaCount=2", "--set", "watchNamespace="+watched, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, &dep); err != nil {
		t.Fatal(err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != images.DefaultOperatorImage {
		t.Fatalf("the chart runs image %q; the bench serves this checkout's operator as %q", img, images.DefaultOperatorImage)
	}
	pods := operatorPods(t, c, &dep, 2)
	t.Logf("helm install: replicas %v", podNames(pods))

	// The cluster in the other namespace is created first: by the time the watched one
	// is Available, an operator that looked there would have acted on it too.
	e.Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unwatched}})
	ignored := newCluster("ignored", 1)
	ignored.Namespace = unwatched
	e.Create(ignored)
	const name = "charted"
	e.Create(newCluster(name, 1))
	e.WaitAvailable(name, 1, 3*time.Minute)
	untouched := func(when string) {
		t.Helper()
		var got etcdv1beta2.EtcdCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(ignored), &got); err != nil {
			t.Fatal(err)
		}
		var ps corev1.PodList
		if err := c.List(ctx, &ps, client.InNamespace(unwatched), client.MatchingLabelsSelector{Selector: render.ClusterSelector(ignored.Name)}); err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != "" || len(got.Status.Conditions) != 0 || len(got.Finalizers) != 0 || len(ps.Items) != 0 {
			t.Errorf("%s: the cluster in unwatched namespace %s was acted on: phase %q, %d conditions, finalizers %v, %d pods",
				when, unwatched, got.Status.Phase, len(got.Status.Conditions), got.Finalizers, len(ps.Items))
		}
	}
	untouched("after install")

	// Leader failover under the chart: the leader's pod is deleted (as a drain or a node
	// loss would); another replica takes the Lease once it expires and acts on a change.
	leader := leaseHolderPod(t, c, ns)
	var deleted *corev1.Pod
	for i := range pods {
		if pods[i].Name == leader {
			deleted = &pods[i]
		}
	}
	if deleted == nil {
		t.Fatalf("the Lease names %q, not one of the replicas %v", leader, podNames(pods))
	}
	start := time.Now()
	if err := c.Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	var next string
	e.Eventually(2*time.Minute, "another replica holds the leader Lease", func() error {
		next = leaseHolderPod(t, c, ns)
		if next == leader || next == "" {
			return fmt.Errorf("the Lease still names %q", next)
		}
		return nil
	})
	standby := next != leader && slicesContainsPod(pods, next)
	t.Logf("leader %s deleted; %s leads %.1fs later (the standby replica: %v)", leader, next, time.Since(start).Seconds(), standby)
	e.Update(name, func(cl *etcdv1beta2.EtcdCluster) { cl.Spec.Size = 3 })
	e.WaitAvailable(name, 3, 3*time.Minute)

	// helm upgrade with a changed value (the memory limit) rolls every replica.
	before := map[types.UID]bool{}
	for _, p := range operatorPods(t, c, &dep, 2) {
		before[p.UID] = true
	}
	const limit = "320Mi"
	if out, err := run(ctx, "upgrade", release, chart, "-n", ns, "--reuse-values",
		"--set", "resources.limits.memory="+limit, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	e.Eventually(2*time.Minute, "both replicas replaced with the new limit", func() error {
		var ps corev1.PodList
		if err := c.List(ctx, &ps, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		n := 0
		for _, p := range ps.Items {
			if before[p.UID] {
				return fmt.Errorf("pod %s from before the upgrade still there", p.Name)
			}
			if p.DeletionTimestamp != nil || !framework.PodReady(&p) {
				return fmt.Errorf("pod %s not ready", p.Name)
			}
			if got := p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; got.Cmp(resource.MustParse(limit)) != 0 {
				return fmt.Errorf("pod %s memory limit %s", p.Name, got.String())
			}
			n++
		}
		if n != 2 {
			return fmt.Errorf("%d replicas", n)
		}
		return nil
	})
	e.WaitAvailable(name, 3, time.Minute)
	untouched("after upgrade")

	// helm uninstall removes what the chart made and nothing the operator or its users
	// made: the CRDs (crds/ is never deleted by Helm), the EtcdClusters, their member
	// pods with their data, and the operator's own Secrets stay.
	cli := e.EtcdClient(name)
	writeKeys(e, cli, 3, "before-uninstall", "v")
	if out, err := run(ctx, "uninstall", release, "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	e.Eventually(time.Minute, "the operator's pods gone", func() error {
		var ps corev1.PodList
		if err := c.List(ctx, &ps, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		if len(ps.Items) != 0 {
			return fmt.Errorf("%d operator pods left", len(ps.Items))
		}
		return nil
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(&dep), &appsv1.Deployment{}); err == nil {
		t.Error("the operator Deployment survived helm uninstall")
	}
	for _, crd := range []string{"etcdclusters", "etcdbackups", "etcdrestores"} {
		if err := c.Get(ctx, client.ObjectKey{Name: crd + ".etcd.database.coreos.com"}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("CRD %s after helm uninstall: %v", crd, err)
		}
	}
	if got := e.Cluster(name); got.Spec.Size != 3 || got.DeletionTimestamp != nil {
		t.Errorf("EtcdCluster %s after helm uninstall: size %d, deleting %v", name, got.Spec.Size, got.DeletionTimestamp)
	}
	if ps := e.MemberPods(name); len(ps) != 3 {
		t.Errorf("%d member pods after helm uninstall, want 3", len(ps))
	}
	e.Eventually(30*time.Second, "etcd serves the keys written before the uninstall", func() error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		r, err := cli.Get(cctx, "before-uninstall/0002")
		if err != nil {
			return err
		}
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v2" {
			return fmt.Errorf("read %v", r.Kvs)
		}
		return nil
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(ignored), &etcdv1beta2.EtcdCluster{}); err != nil {
		t.Errorf("the unwatched cluster after helm uninstall: %v", err)
	}
	// v1beta2 is the storage version; v1 is served by the conversion webhook, which
	// went with the operator, so v1 reads (kubectl's default) fail until one runs again.
	if err := c.Get(ctx, client.ObjectKey{Namespace: watched, Name: name}, &etcdv1.EtcdCluster{}); err == nil {
		t.Error("an EtcdCluster read as v1 with no operator to convert it")
	} else {
		t.Logf("read as v1 after helm uninstall: %v", err)
	}
	var left corev1.SecretList
	if err := c.List(ctx, &left, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	t.Logf("Secrets left in %s after helm uninstall: %v", ns, secretNames(left.Items))
}

// helmCLI is the helm binary hack/tools.sh builds from the helm.sh/helm/v3 release this
// module requires: the one the operator's member chart is rendered with, read from
// go.mod as the script reads it, so the two cannot drift apart.
func helmCLI(t *testing.T, root string) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*helm\.sh/helm/v3 (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require helm.sh/helm/v3")
	}
	return testenv.Require(t, filepath.Join("helm-"+string(m[1]), "helm"))
}

// helmRunner runs the helm CLI against the bench with its configuration, cache and data
// in a temporary directory (HOME too: client-go's discovery cache), so nothing of the
// machine's is read or written. It returns helm's combined output.
func helmRunner(t *testing.T, helm, kubeconfig string) func(ctx context.Context, args ...string) (string, error) {
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "KUBECONFIG="+kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	return func(ctx context.Context, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		start := time.Now()
		cmd := exec.CommandContext(ctx, helm, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		t.Logf("helm %s: %.1fs, %v", args[0], time.Since(start).Seconds(), err)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("helm %v: %v", args, err)
		}
		return string(out), err
	}
}

// operatorPods waits for want ready, not terminating pods of the Deployment.
func operatorPods(t *testing.T, c client.Client, dep *appsv1.Deployment, want int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	framework.Eventually(t, 2*time.Minute, fmt.Sprintf("%d ready operator pods", want), func() error {
		var ps corev1.PodList
		if err := c.List(context.Background(), &ps, client.InNamespace(dep.Namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		ready = ready[:0]
		for _, p := range ps.Items {
			if p.DeletionTimestamp == nil && framework.PodReady(&p) {
				ready = append(ready, p)
			}
		}
		if len(ready) != want {
			return fmt.Errorf("%d ready of %d pods", len(ready), len(ps.Items))
		}
		return nil
	})
	return ready
}

// leaseHolderPod is the pod named by the operator's leader election Lease
// (controller-runtime's identity is "<hostname>_<uuid>", the hostname the pod's name).
func leaseHolderPod(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	var l coordinationv1.Lease
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "etcd-operator.etcd.database.coreos.com"}, &l); err != nil {
		t.Fatalf("leader Lease: %v", err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return pod
}

func podNames(ps []corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func slicesContainsPod(ps []corev1.Pod, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

func secretNames(ss []corev1.Secret) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}
