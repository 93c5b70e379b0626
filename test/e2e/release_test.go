package e2e

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	"github.com/etcd-operator/etcd-operator/internal/ociimage"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
	"github.com/etcd-operator/etcd-operator/test/bench/olm"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// releaseVersion is the version TestReleaseArtifacts releases: the Makefile's, whose
// bundle replaces the released 0.1.0 in the catalog.
const releaseVersion = "0.2.0"

// pluginPlatform is the one kubectl plugin platform TestReleaseArtifacts builds: the
// machine's, whose binary it runs against a bench.
const pluginPlatform = goruntime.GOOS + "/" + goruntime.GOARCH

// TestReleaseArtifacts is `make release` and `make release-push` as a maintainer runs
// them, against the bench registry, then each install method a user has, from exactly
// those artifacts, on a bench of its own: `kubectl apply` of install.yaml, `helm
// install` of the chart package from a chart repository serving the release's
// index.yaml, and OLM from the released catalog image. Each must run the released
// operator image by its index digest and make an EtcdCluster Available. Before that,
// the release itself is checked: SHA256SUMS passes `sha256sum -c`, the pushed index
// has a linux/amd64 and a linux/arm64 image each running a static ELF operator for its
// machine, and the kubectl-etcd binary is built for its platform. Only the plugin for
// this machine (which the test runs) is built: the other three are cross-compiles CI
// would pay for on a cold build cache and nothing here runs them (hack/release's
// TestDefaultPlatforms keeps the Makefile's default list whole).
func TestReleaseArtifacts(t *testing.T) {
	root := framework.RepoRoot(t)
	helm := helmCLI(t, root)
	kubectl := testenv.Require(t, filepath.Join("envtest-"+testenv.K8sVersion, "kubectl"))
	testenv.Require(t, filepath.Join("opm-"+images.OPMVersion, ".done"))
	// Under a path of its own in the bench registry: other tests of the process push
	// bundles and catalogs of the same version under the registry's root.
	reg := bench.RegistryAddress() + "/release"
	dist := t.TempDir()

	// release-push reads logins from the docker config; the bench registry asks for none,
	// and the machine's config (a credential helper it names) must not matter here.
	dockerConfig := t.TempDir()
	if err := os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"DOCKER_CONFIG=" + dockerConfig}
	// make release needs no bench: it runs while the first one starts.
	t0 := time.Now()
	made := make(chan error, 1)
	go func() {
		made <- runMake(root, env, "release", "VERSION="+releaseVersion, "REGISTRY="+reg, "DIST="+dist,
			"PLUGIN_PLATFORMS="+pluginPlatform)
	}()
	var operatorImage string
	pushed := sync.OnceValue(func() error {
		if err := <-made; err != nil {
			return err
		}
		t.Logf("release: make release took %v", time.Since(t0).Round(time.Second))
		img, err := checkRelease(t, dist, reg)
		if err != nil {
			return err
		}
		operatorImage = img
		t1 := time.Now()
		if err := runMake(root, env, "release-push", "VERSION="+releaseVersion, "DIST="+dist); err != nil {
			return err
		}
		t.Logf("release: make release-push took %v", time.Since(t1).Round(time.Second))
		return checkPushedIndex(reg + "/etcd-operator:v" + releaseVersion)
	})
	// newBench is a bench serving the pushed release (the process registry outlives it).
	newBench := func(t *testing.T, olm bool) *bench.Bench {
		s := framework.NewScheme()
		utilruntime.Must(etcdv1.AddToScheme(s))
		utilruntime.Must(v1alpha1.AddToScheme(s))
		b := bench.NewForTest(t, bench.Options{Scheme: s, OLM: olm, Log: t.Logf})
		if err := pushed(); err != nil {
			t.Fatalf("release: %v", err)
		}
		return b
	}

	t.Run("kubectl apply install.yaml", func(t *testing.T) {
		b := newBench(t, false)
		raw, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		// Server-side: the CRDs are too large for the last-applied annotation.
		if out, err := exec.Command(kubectl, "--kubeconfig", b.Kubeconfig(), "apply", "--server-side",
			"-f", filepath.Join(dist, "install.yaml")).CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply -f install.yaml: %v\n%s", err, out)
		}
		var dep *appsv1.Deployment
		for _, u := range decodeObjects(t, raw) {
			if u.GetKind() == "Deployment" {
				dep = &appsv1.Deployment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
					t.Fatal(err)
				}
			}
		}
		if dep == nil {
			t.Fatal("install.yaml has no Deployment")
		}
		name := releasedOperatorRuns(t, b, dep.Namespace, operatorImage, "released-kubectl")
		// The released plugin, for this machine, reads the cluster.
		plugin := filepath.Join(dist, "kubectl-etcd-"+strings.ReplaceAll(pluginPlatform, "/", "-"))
		out, err := exec.Command(plugin, "--kubeconfig", b.Kubeconfig(), "-n", "default", "member", "list", name, "-o", "json").CombinedOutput()
		var members []struct{ Name string }
		if err != nil || json.Unmarshal(out, &members) != nil || len(members) != 1 {
			t.Errorf("released kubectl-etcd member list %s: %v\n%s", name, err, out)
		}
	})

	t.Run("helm install of the chart package", func(t *testing.T) {
		b := newBench(t, false)
		// A chart repository serving the release directory, as a web server would.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.FileServer(http.Dir(dist)), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
		run := helmRunner(t, helm, b.Kubeconfig())
		ctx := context.Background()
		if out, err := run(ctx, "repo", "add", "released", "http://"+l.Addr().String()); err != nil {
			t.Fatalf("helm repo add: %v\n%s", err, out)
		}
		const ns = "etcd-operator-system"
		if out, err := run(ctx, "install", "etcd-operator", "released/etcd-operator", "--version", releaseVersion,
			"-n", ns, "--create-namespace", "--wait", "--timeout", "3m"); err != nil {
			t.Fatalf("helm install released/etcd-operator: %v\n%s", err, out)
		}
		releasedOperatorRuns(t, b, ns, operatorImage, "released-helm")
	})

	t.Run("OLM from the released catalog", func(t *testing.T) {
		b := newBench(t, true)
		c := b.Client()
		ctx := context.Background()
		t.Cleanup(func() {
			if t.Failed() {
				logOLMState(t, b)
			}
		})
		t0 := time.Now()
		if err := olm.Install(ctx, c, olm.Options{Logf: t.Logf}); err != nil {
			t.Fatalf("install OLM: %v", err)
		}
		const source = "etcd-operator-release"
		createYAML(t, c, `apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: `+source+`, namespace: olm}
spec:
  sourceType: grpc
  image: `+reg+"/etcd-operator-catalog:v"+releaseVersion+`
  grpcPodConfig: {securityContextConfig: restricted}
`)
		// No startingCSV: the channel's head, this release, as a user subscribing gets.
		createYAML(t, c, `apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: `+olmPackage+`, namespace: `+olmOperatorsNS+`}
spec: {name: `+olmPackage+`, channel: alpha, source: `+source+`, sourceNamespace: olm}
`)
		approveAndWaitCSV(t, c, "etcd-operator.v"+releaseVersion)
		t.Logf("release: OLM installed and CSV Succeeded in %v", time.Since(t0).Round(time.Second))
		releasedOperatorRuns(t, b, olmOperatorsNS, operatorImage, "released-olm")
	})
}

// releasedOperatorRuns waits for the operator pods in ns to be ready pods of image,
// then creates a one-member EtcdCluster and waits for it to be Available. It returns
// the cluster's name.
func releasedOperatorRuns(t *testing.T, b *bench.Bench, ns, image, name string) string {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			logOperatorPods(t, b, ns)
		}
	})
	wantOperatorImage(t, b.Client(), ns, image)
	e := framework.Attach(t, b)
	// The conversion webhook may take a moment to be served through its Service. A
	// Create whose reply was lost (a timeout) may still have stored the object: the
	// retry's AlreadyExists means it is there.
	framework.Eventually(t, time.Minute, "EtcdCluster "+name+" created", func() error {
		err := b.Client().Create(context.Background(), newCluster(name, 1))
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	e.WaitAvailable(name, 1, 3*time.Minute)
	return name
}

// runMake runs make in root with args and env added to the environment, returning its
// output's tail when it fails.
func runMake(root string, env []string, args ...string) error {
	// At a lower priority: a release compiles for several platforms, and the benches
	// beside it in make test are the ones with latencies to keep.
	cmd := exec.Command("nice", append([]string{"-n", "10", "make", "--no-print-directory"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 8000 {
			out = out[len(out)-8000:]
		}
		return fmt.Errorf("make %s: %v\n%s", args[0], err, out)
	}
	return nil
}

// checkRelease checks the release directory's own consistency and returns the operator
// image its install methods must run: the index pushed as the version's tag, by digest.
func checkRelease(t *testing.T, dist, reg string) (string, error) {
	// The checksums file is sha256sum's, over every file.
	cmd := exec.Command("sha256sum", "--check", "--strict", "--quiet", "SHA256SUMS")
	cmd.Dir = dist
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("sha256sum --check SHA256SUMS: %v\n%s", err, out)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		return "", err
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		listed = append(listed, line[66:])
	}
	var files []string
	if err := filepath.WalkDir(dist, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "SHA256SUMS" {
			rel, _ := filepath.Rel(dist, p)
			files = append(files, rel)
		}
		return err
	}); err != nil {
		return "", err
	}
	slices.Sort(files)
	if !slices.Equal(files, listed) {
		return "", fmt.Errorf("SHA256SUMS lists %v, the release has %v", listed, files)
	}
	for _, f := range []string{"install.yaml", "index.yaml", "etcd-operator-" + releaseVersion + ".tgz", "catalog.yaml", "images/index.json",
		"bundle/metadata/annotations.yaml", "bundle/manifests/etcd-operator.v" + releaseVersion + ".clusterserviceversion.yaml", ".etcd-operator-release"} {
		if !slices.Contains(files, f) {
			return "", fmt.Errorf("the release has no %s: %v", f, files)
		}
	}
	// The kubectl plugin for this machine and no other, built for it.
	plugin := filepath.Join(dist, "kubectl-etcd-"+strings.ReplaceAll(pluginPlatform, "/", "-"))
	var plugins []string
	for _, f := range files {
		if strings.HasPrefix(f, "kubectl-etcd-") {
			plugins = append(plugins, f)
		}
	}
	if !slices.Equal(plugins, []string{filepath.Base(plugin)}) {
		return "", fmt.Errorf("the release's kubectl plugins are %v, want %s only", plugins, filepath.Base(plugin))
	}
	if goruntime.GOOS == "linux" {
		f, err := elf.Open(plugin)
		if err != nil {
			return "", err
		}
		got := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		f.Close()
		if got != goruntime.GOARCH {
			return "", fmt.Errorf("%s is built for %q", plugin, got)
		}
	}
	// The operator: the layout entry named by the version's tag.
	raw, err := os.ReadFile(filepath.Join(dist, "images", "index.json"))
	if err != nil {
		return "", err
	}
	var layout struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(raw, &layout); err != nil {
		return "", err
	}
	var names, bundles []string
	image := ""
	for _, m := range layout.Manifests {
		ref := m.Annotations[ociimage.RefNameAnnotation]
		names = append(names, ref)
		if ref == reg+"/etcd-operator:v"+releaseVersion {
			image = reg + "/etcd-operator@" + m.Digest
		}
		if strings.HasPrefix(ref, reg+"/etcd-operator-bundle:") {
			bundles = append(bundles, reg+"/etcd-operator-bundle@"+m.Digest)
		}
	}
	// The catalog names each bundle by the digest of the image released for it.
	fbc, err := os.ReadFile(filepath.Join(dist, "catalog.yaml"))
	if err != nil {
		return "", err
	}
	for _, b := range bundles {
		if !bytes.Contains(fbc, []byte("image: "+b+"\n")) {
			return "", fmt.Errorf("catalog.yaml does not name the bundle %s", b)
		}
	}
	slices.Sort(names)
	want := []string{reg + "/etcd-operator-bundle:v0.1.0", reg + "/etcd-operator-bundle:v" + releaseVersion,
		reg + "/etcd-operator-catalog:v" + releaseVersion, reg + "/etcd-operator:v" + releaseVersion}
	if !slices.Equal(names, want) || image == "" {
		return "", fmt.Errorf("the release's images are %v, want %v", names, want)
	}
	// install.yaml names it (the chart and the CSV are checked by running them).
	b, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
	if err != nil {
		return "", err
	}
	if !bytes.Contains(b, []byte("image: "+image+"\n")) {
		return "", fmt.Errorf("install.yaml does not run %s", image)
	}
	t.Logf("release: %d files, operator %s", len(files), image)
	return image, nil
}

// checkPushedIndex reads the operator image back from the registry as a node would
// find it: one index, a linux/amd64 and a linux/arm64 image, each config naming its
// platform and each /manager a static ELF for that machine.
func checkPushedIndex(ref string) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	idx, err := remote.Index(r)
	if err != nil {
		return fmt.Errorf("the pushed operator image %s: %w", ref, err)
	}
	platforms, err := ociimage.CheckIndex(idx, ociimage.OperatorBinaryPath)
	if err != nil {
		return fmt.Errorf("the pushed operator image %s: %w", ref, err)
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		return fmt.Errorf("the pushed operator image %s is for %v, want linux/amd64 and linux/arm64", ref, platforms)
	}
	return nil
}
