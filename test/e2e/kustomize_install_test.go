package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestKustomizeInstallServesConversion installs the operator without OLM, exactly as
// `kustomize build config/default | kubectl apply -f -` does, and runs it as a bench
// pod: it must provision its own serving certificate, inject the CA into every CRD, and
// answer a ConversionReview the way the API server checks it; and it must run clusters
// under the kustomize install's RBAC. (The API server's own calls through the webhook
// Service are covered by internal/webhook and test/olm against envtest.)
func TestKustomizeInstallServesConversion(t *testing.T) {
	root := framework.RepoRoot(t)
	objs := kustomizeBuild(t, root, "config/default")
	var dep *appsv1.Deployment
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			dep = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dep == nil || len(dep.Spec.Template.Spec.Containers) == 0 {
		t.Fatal("config/default has no operator Deployment")
	}
	container := dep.Spec.Template.Spec.Containers[0]

	s := schemeWithV1(t)
	if container.Image != images.DefaultOperatorImage {
		t.Fatalf("config/default runs image %q; the bench serves this checkout's operator as %q", container.Image, images.DefaultOperatorImage)
	}
	b := bench.NewForTest(t, bench.Options{Scheme: s})
	c := b.Client()
	ctx := context.Background()
	applyInstall(ctx, t, c, objs)
	ns := dep.Namespace
	t.Cleanup(func() {
		if t.Failed() {
			logOperatorPods(t, b, ns)
		}
	})
	framework.Eventually(t, 3*time.Minute, "operator Deployment available", deploymentAvailable(ctx, c, dep))
	// The pod gets its memory limit from the downward API (MEMORY_LIMIT) and the operator
	// sets Go's soft memory limit to 90% of it before its manager starts (main.go).
	limit := container.Resources.Limits.Memory().Value()
	if limit == 0 {
		t.Fatal("config/manager sets no memory limit")
	}
	var ops corev1.PodList
	if err := c.List(ctx, &ops, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil || len(ops.Items) == 0 {
		t.Fatalf("operator pods: %d (%v)", len(ops.Items), err)
	}
	if out, err := b.PodLogs(ctx, ns, ops.Items[0].Name, "manager"); err != nil {
		t.Errorf("operator log: %v", err)
	} else if want := fmt.Sprintf(`"bytes":%d`, limit-limit/10); !strings.Contains(out, "soft memory limit set") || !strings.Contains(out, want) {
		t.Errorf("the operator's log does not say it set a soft memory limit of %s (90%% of %d):\n%.2000s", want, limit, out)
	}
	framework.Eventually(t, time.Minute, "caBundle injected into every CRD", func() error {
		return eachCRD(ctx, c, objs, func(crd *apiextensionsv1.CustomResourceDefinition) error {
			if cv := crd.Spec.Conversion; cv == nil || cv.Webhook == nil || cv.Webhook.ClientConfig == nil || len(cv.Webhook.ClientConfig.CABundle) == 0 {
				return fmt.Errorf("%s has no caBundle yet", crd.Name)
			}
			return nil
		})
	})

	// First the webhook's answer as the API server checks it, made directly to the pod:
	// a ConversionReview verified with the injected caBundle for the Service's DNS name
	// (and refused for another name). Then the API server's own calls, through the
	// Service, below.
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "etcdclusters.etcd.database.coreos.com"}, &crd); err != nil {
		t.Fatal(err)
	}
	svc := crd.Spec.Conversion.Webhook.ClientConfig.Service
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(crd.Spec.Conversion.Webhook.ClientConfig.CABundle) {
		t.Fatal("caBundle holds no certificate")
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil || len(pods.Items) != 1 {
		t.Fatalf("operator pods: %d (%v)", len(pods.Items), err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: svc.Name + "." + svc.Namespace + ".svc", MinVersion: tls.VersionTLS12}}}
	url := fmt.Sprintf("https://%s:9443%s", pods.Items[0].Status.PodIP, *svc.Path)

	stored := &etcdv1beta2.EtcdCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: "converted", Namespace: "default", UID: "u1"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16",
			Pod: &etcdv1beta2.PodPolicy{DNSTimeoutInSecond: 90}},
	}
	raw, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "review-1", DesiredAPIVersion: etcdv1.GroupVersion.String(),
			Objects: []runtime.RawExtension{{Raw: raw}}},
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	var got apiextensionsv1.ConversionReview
	framework.Eventually(t, time.Minute, "a conversion answered by the operator pod", func() error {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return json.NewDecoder(resp.Body).Decode(&got)
	})
	if got.Response == nil || got.Response.UID != "review-1" || got.Response.Result.Status != metav1.StatusSuccess || len(got.Response.ConvertedObjects) != 1 {
		t.Fatalf("conversion response %+v", got.Response)
	}
	var v1c etcdv1.EtcdCluster
	if err := json.Unmarshal(got.Response.ConvertedObjects[0].Raw, &v1c); err != nil {
		t.Fatal(err)
	}
	if v1c.APIVersion != etcdv1.GroupVersion.String() || v1c.Spec.Size != 3 || v1c.Spec.Pod == nil ||
		v1c.Spec.Pod.DNSTimeout == nil || v1c.Spec.Pod.DNSTimeout.Duration != 90*time.Second {
		t.Errorf("converted to %s: size %d pod %+v; want v1, size 3, dnsTimeout 90s", v1c.APIVersion, v1c.Spec.Size, v1c.Spec.Pod)
	}
	// Another CA, or another name, is refused: the API server would refuse it too.
	bad := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: "someone-else." + svc.Namespace + ".svc", MinVersion: tls.VersionTLS12}}}
	if resp, err := bad.Post(url, "application/json", bytes.NewReader(body)); err == nil {
		resp.Body.Close()
		t.Error("the serving certificate is accepted for a name that is not the webhook Service's")
	}

	// The pod runs with a read-only root file system (it got this far), and serves
	// /metrics over HTTPS to the token of config/prometheus's metrics reader only.
	scrapeMetricsWithToken(ctx, t, c, root, ns, pods.Items[0].Status.PodIP, dep.Spec.Template.Spec.ServiceAccountName)

	// The API server converts through the webhook Service (kube-proxy routes it to the
	// pod): a cluster written as v1 is stored as v1beta2 and read back as either.
	e := framework.Attach(t, b)
	created := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "kustomized", Namespace: "default"},
		Spec: etcdv1.EtcdClusterSpec{Size: 1, Version: "3.6.16"}}
	framework.Eventually(t, time.Minute, "a v1 EtcdCluster accepted through the conversion webhook", func() error {
		return c.Create(ctx, created)
	})
	var asV1beta2 etcdv1beta2.EtcdCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kustomized"}, &asV1beta2); err != nil || asV1beta2.Spec.Size != 1 {
		t.Fatalf("the v1 cluster read as v1beta2: size %d, %v", asV1beta2.Spec.Size, err)
	}
	// And the pod is a working operator under the kustomize install's RBAC.
	e.WaitAvailable("kustomized", 1, 3*time.Minute)
	var back etcdv1.EtcdCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kustomized"}, &back); err != nil || back.Spec.Size != 1 || back.Spec.Version != "3.6.16" {
		t.Fatalf("read back as v1 through the webhook: %+v, %v", back.Spec, err)
	}
}

func kustomizeBuild(t *testing.T, root, dir string) []*unstructured.Unstructured {
	t.Helper()
	bin := testenv.Require(t, "bin/kustomize-v5.8.2")
	cmd := exec.Command(bin, "build", dir)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
	}
	return decodeObjects(t, out)
}

// decodeObjects reads a multi-document YAML stream of Kubernetes objects (what
// kustomize build writes, a release's install.yaml).
func decodeObjects(t *testing.T, out []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// schemeWithV1 is the framework's scheme with the v1 API too (installs serve both
// versions).
func schemeWithV1(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := framework.NewScheme()
	if err := etcdv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// applyInstall server-side applies objs: the CRDs first (and waits until they are
// established), then everything else, as kubectl would converge.
func applyInstall(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, crdPass := range []bool{true, false} {
		for _, u := range objs {
			if (u.GetKind() == "CustomResourceDefinition") != crdPass {
				continue
			}
			if err := c.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
				t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
		if crdPass {
			framework.Eventually(t, time.Minute, "CRDs established", func() error { return crdsEstablished(ctx, c, objs) })
		}
	}
}

func crdsEstablished(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	return eachCRD(ctx, c, objs, func(crd *apiextensionsv1.CustomResourceDefinition) error {
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("%s not established", crd.Name)
	})
}

// eachCRD reads each CustomResourceDefinition among objs from the API server and asks
// check of it; the first error stops.
func eachCRD(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, check func(*apiextensionsv1.CustomResourceDefinition) error) error {
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: u.GetName()}, &crd); err != nil {
			return err
		}
		if err := check(&crd); err != nil {
			return err
		}
	}
	return nil
}

// scrapeMetricsWithToken applies config/prometheus's metrics reader (ClusterRole,
// ServiceAccount, binding; not its monitors, whose CRDs the bench lacks) and scrapes the
// operator pod's metrics port: 200 with that ServiceAccount's token, 401 without a
// token, 403 with the token of a ServiceAccount not allowed get on /metrics (the
// operator's own).
func scrapeMetricsWithToken(ctx context.Context, t *testing.T, c client.Client, root, ns, podIP, operatorSA string) {
	t.Helper()
	if podIP == "" {
		t.Fatal("operator pod has no IP")
	}
	reader := ""
	for _, u := range kustomizeBuild(t, root, "config/prometheus") {
		switch u.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "ServiceAccount":
			if u.GetKind() == "ServiceAccount" {
				reader = u.GetName()
			}
			if err := c.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
				t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
	if reader == "" {
		t.Fatal("config/prometheus has no metrics reader ServiceAccount")
	}
	token := func(sa string) string {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}
		if err := c.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}, tr); err != nil {
			t.Fatalf("token for %s/%s: %v", ns, sa, err)
		}
		return tr.Status.Token
	}
	// The certificate is the operator's self-signed one (kept in memory).
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // self-signed by design
	get := func(bearer string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s:8443/metrics", podIP), nil)
		if err != nil {
			return 0, "", err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		return resp.StatusCode, string(body), err
	}
	allowed := token(reader)
	// The binding may take a moment to reach the authorizer's cache.
	framework.Eventually(t, time.Minute, "metrics scraped with the metrics reader's token", func() error {
		code, body, err := get(allowed)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
			return fmt.Errorf("HTTP %d, %d bytes", code, len(body))
		}
		return nil
	})
	if code, _, err := get(""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("scrape without a token: HTTP %d, %v; want 401", code, err)
	}
	// The operator's own ServiceAccount may not get /metrics.
	if code, _, err := get(token(operatorSA)); err != nil || code != http.StatusForbidden {
		t.Errorf("scrape with a token not allowed /metrics: HTTP %d, %v; want 403", code, err)
	}
}
