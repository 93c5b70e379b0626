package olm

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// warnings collects the Warning headers the API server sends.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// TestSizeWarnings applies config/admission's policy to a real API server: sizes above 7
// and even sizes are accepted with a warning naming spec.size (as CoreOS's operator
// warned), odd sizes up to 7 without one, in both served versions. The chart carries the
// same policy.
func TestSizeWarnings(t *testing.T) {
	cfg := startWithChartCRDs(t)
	w := &warnings{}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = w
	dc, err := dynamic.NewForConfig(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	policy := createPolicy(ctx, t, dc, "config/admission/size_warnings.yaml")

	n := 0
	create := func(version string, size int64) []string {
		t.Helper()
		n++
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "etcd.database.coreos.com/" + version, "kind": "EtcdCluster",
			"metadata": map[string]any{"name": fmt.Sprintf("c%d", n), "namespace": "default"},
			"spec":     map[string]any{"size": size, "version": "3.6.16"},
		}}
		gvr := schema.GroupVersionResource{Group: "etcd.database.coreos.com", Version: version, Resource: "etcdclusters"}
		w.take()
		if _, err := dc.Resource(gvr).Namespace("default").Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("size %d in %s refused: %v (warnings only, never a refusal)", size, version, err)
		}
		return w.take()
	}
	// The policy takes effect a moment after it is created.
	poll.Eventually(t, time.Minute, 200*time.Millisecond, "the warning for size 9", func() error {
		if got := create("v1beta2", 9); !containsAll(got, "spec.size: 9", "more than 7") {
			return fmt.Errorf("warnings %v", got)
		}
		return nil
	})
	for _, tc := range []struct {
		version string
		size    int64
		want    []string // substrings of one warning each; none: no warning
	}{
		{"v1beta2", 3, nil},
		{"v1beta2", 7, nil},
		{"v1beta2", 1, nil},
		{"v1beta2", 4, []string{"spec.size: 4 is even", "size 3"}},
		{"v1", 5, nil},
		{"v1", 8, []string{"more than 7", "is even"}},
	} {
		got := create(tc.version, tc.size)
		if len(tc.want) == 0 && len(got) != 0 {
			t.Errorf("size %d (%s): warnings %v, want none", tc.size, tc.version, got)
		}
		if !containsAll(got, tc.want...) {
			t.Errorf("size %d (%s): warnings %v, want %v", tc.size, tc.version, got, tc.want)
		}
	}

	// The chart's policy is the same policy.
	sameInChart(t, policy)
}

// sameInChart: the chart renders each of config/admission's objects given (by kind and
// name, the chart's names prefixed with the release's) with the same spec.
func sameInChart(t *testing.T, policy []*unstructured.Unstructured) {
	t.Helper()
	sameInChartWith(t, nil, policy)
}

// sameInChartWith is sameInChart for the chart rendered with vals.
func sameInChartWith(t *testing.T, vals map[string]any, policy []*unstructured.Unstructured) {
	t.Helper()
	r := mustRender(t, vals)
	for _, want := range policy {
		found := false
		for _, o := range r.objs {
			if o.GetKind() != want.GetKind() || !strings.HasSuffix(o.GetName(), "-"+want.GetName()) {
				continue
			}
			found = true
			gs, ws := o.Object["spec"].(map[string]any), want.Object["spec"].(map[string]any)
			if gs["policyName"] != nil {
				gs, ws = without(gs, "policyName"), without(ws, "policyName")
			}
			if !reflect.DeepEqual(gs, ws) {
				t.Errorf("chart %s spec differs from config/admission:\n got %v\nwant %v", o.GetKind(), gs, ws)
			}
		}
		if !found {
			t.Errorf("the chart has no %s %s", want.GetKind(), want.GetName())
		}
	}
}

func containsAll(warnings []string, subs ...string) bool {
	all := strings.Join(warnings, "\n")
	for _, s := range subs {
		if !strings.Contains(all, s) {
			return false
		}
	}
	return true
}

func without(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// TestAuthAnnotationsAdmission applies config/admission's auth policy to a real API
// server: a v1beta2 EtcdCluster whose auth annotations v1's spec.auth schema would
// refuse is refused, naming the annotation (a value other than "enabled", a root Secret
// that is no Secret name or without auth, auth removed, the root Secret changed once auth
// is on); a valid one and unrelated changes pass, and so does an update of an object
// stored with bad annotations before the policy that leaves them as they are (it can
// still be deleted, its finalizers removed). The chart carries the same policy.
func TestAuthAnnotationsAdmission(t *testing.T) {
	cfg := startWithChartCRDs(t)
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	const (
		auth       = "etcd.database.coreos.com/auth"
		rootSecret = "etcd.database.coreos.com/auth-root-secret"
	)
	clusters := dc.Resource(schema.GroupVersionResource{Group: "etcd.database.coreos.com", Version: "v1beta2", Resource: "etcdclusters"}).Namespace("default")
	n := 0
	obj := func(ann map[string]any) *unstructured.Unstructured {
		n++
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
			"metadata": map[string]any{"name": fmt.Sprintf("a%d", n), "namespace": "default", "annotations": ann},
			"spec":     map[string]any{"size": int64(3), "version": "3.6.16"},
		}}
	}
	// Stored before the policy, with a value the policy refuses.
	legacy, err := clusters.Create(ctx, obj(map[string]any{auth: "yes"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	policy := createPolicy(ctx, t, dc, "config/admission/auth_annotations.yaml")
	refused := func(err error, annotation string) error {
		switch {
		case err == nil:
			return fmt.Errorf("accepted; want a refusal naming %s", annotation)
		case !strings.Contains(err.Error(), "metadata.annotations["+annotation+"]"):
			return fmt.Errorf("refusal does not name %s: %v", annotation, err)
		}
		return nil
	}
	// The policy takes effect a moment after it is created.
	poll.Eventually(t, time.Minute, 200*time.Millisecond, "a bad auth value refused", func() error {
		_, err := clusters.Create(ctx, obj(map[string]any{auth: "true"}), metav1.CreateOptions{})
		return refused(err, auth)
	})
	for _, tc := range []struct {
		name string
		ann  map[string]any
		want string // the annotation named; "": accepted
	}{
		{"root Secret not a name", map[string]any{auth: "enabled", rootSecret: "Bad_Name"}, rootSecret},
		{"root Secret without auth", map[string]any{rootSecret: "root-pw"}, rootSecret},
		{"empty auth", map[string]any{auth: ""}, auth},
		// The policy once stood "<unset>" in for a missing annotation, so that value passed.
		{"auth \"<unset>\"", map[string]any{auth: "<unset>"}, auth},
		{"root Secret \"<unset>\" without auth", map[string]any{rootSecret: "<unset>"}, rootSecret},
		{"auth with the operator's Secret", map[string]any{auth: "enabled"}, ""},
		{"auth with a named Secret", map[string]any{auth: "enabled", rootSecret: "root-pw"}, ""},
	} {
		_, err := clusters.Create(ctx, obj(tc.ann), metav1.CreateOptions{})
		if tc.want == "" && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		if tc.want != "" {
			if err := refused(err, tc.want); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}

	on, err := clusters.Create(ctx, obj(map[string]any{auth: "enabled", rootSecret: "root-pw"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	update := func(o *unstructured.Unstructured, change func(ann map[string]string)) error {
		cur, err := clusters.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ann := cur.GetAnnotations()
		change(ann)
		cur.SetAnnotations(ann)
		_, err = clusters.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}
	if err := refused(update(on, func(a map[string]string) { delete(a, auth); delete(a, rootSecret) }), auth); err != nil {
		t.Errorf("auth removed: %v", err)
	}
	if err := refused(update(on, func(a map[string]string) { a[auth] = "<unset>" }), auth); err != nil {
		t.Errorf("auth changed to \"<unset>\": %v", err)
	}
	if err := refused(update(on, func(a map[string]string) { delete(a, rootSecret) }), rootSecret); err != nil {
		t.Errorf("root Secret removed: %v", err)
	}
	if err := refused(update(on, func(a map[string]string) { a[rootSecret] = "other-pw" }), rootSecret); err != nil {
		t.Errorf("root Secret changed: %v", err)
	}
	if err := update(on, func(a map[string]string) { a["team"] = "storage" }); err != nil {
		t.Errorf("an unrelated annotation added: %v", err)
	}
	if err := update(legacy, func(a map[string]string) { a["team"] = "storage" }); err != nil {
		t.Errorf("an object stored with a bad value, updated without touching it: %v", err)
	}
	if err := refused(update(legacy, func(a map[string]string) { a[auth] = "on" }), auth); err != nil {
		t.Errorf("the stored bad value changed to another: %v", err)
	}

	// v1 requests: the API server converts them to v1beta2 through the operator's
	// conversion webhook (run here in the test process) and the policy judges the
	// converted object. A v1 object's annotations convert through unchanged, so the same
	// annotations are refused there; spec.auth arrives as the annotations and passes.
	useConversionWebhook(ctx, t, cfg, startConversionWebhook(t, cfg), "etcdclusters.etcd.database.coreos.com")
	v1clusters := dc.Resource(schema.GroupVersionResource{Group: "etcd.database.coreos.com", Version: "v1", Resource: "etcdclusters"}).Namespace("default")
	v1obj := func(ann map[string]any, auth map[string]any) *unstructured.Unstructured {
		u := obj(ann)
		u.SetAPIVersion("etcd.database.coreos.com/v1")
		if auth != nil {
			u.Object["spec"].(map[string]any)["auth"] = auth
		}
		return u
	}
	// The CRD's new conversion takes effect a moment after the update: until then v1
	// spec.auth is dropped (converted by apiVersion only) instead of becoming annotations.
	var v1on *unstructured.Unstructured
	poll.Eventually(t, time.Minute, 200*time.Millisecond, "v1 spec.auth stored as the annotations", func() error {
		u, err := v1clusters.Create(ctx, v1obj(nil, map[string]any{"rootSecret": "v1-root"}), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("v1 spec.auth refused: %w", err)
		}
		stored, err := clusters.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if a := stored.GetAnnotations(); a[auth] != "enabled" || a[rootSecret] != "v1-root" {
			return fmt.Errorf("stored as v1beta2 with annotations %v", a)
		}
		v1on = u
		return nil
	})
	if err := refused(func() error {
		_, err := v1clusters.Create(ctx, v1obj(map[string]any{auth: "true"}, nil), metav1.CreateOptions{})
		return err
	}(), auth); err != nil {
		t.Errorf("v1, a bad auth annotation: %v", err)
	}
	if err := refused(func() error {
		_, err := v1clusters.Create(ctx, v1obj(map[string]any{auth: "enabled", rootSecret: "Bad_Name"}, nil), metav1.CreateOptions{})
		return err
	}(), rootSecret); err != nil {
		t.Errorf("v1, root Secret annotation not a name: %v", err)
	}
	// Stored as v1beta2 annotations, which the policy then holds to: auth stays on.
	cur, err := v1clusters.Get(ctx, v1on.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cur.Object["spec"].(map[string]any), "auth")
	if _, err := v1clusters.Update(ctx, cur, metav1.UpdateOptions{}); err == nil {
		t.Errorf("v1 spec.auth removed: accepted")
	}
	if err := update(v1on, func(a map[string]string) { a[rootSecret] = "other-pw" }); refused(err, rootSecret) != nil {
		t.Errorf("the root Secret of a cluster made through v1 changed through v1beta2: %v", err)
	}

	sameInChart(t, policy)
}

// createPolicy creates the ValidatingAdmissionPolicies and their bindings in file rel and
// returns them.
func createPolicy(ctx context.Context, t *testing.T, dc dynamic.Interface, rel string) []*unstructured.Unstructured {
	t.Helper()
	policy := readObjects(t, readFile(t, filepath.Join(root, rel)))
	for _, o := range policy {
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1",
			Resource: map[string]string{"ValidatingAdmissionPolicy": "validatingadmissionpolicies",
				"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}[o.GetKind()]}
		if _, err := dc.Resource(gvr).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", o.GetKind(), err)
		}
	}
	return policy
}

// useConversionWebhook points the named CRD's conversion at hook (envtest installs
// CRDs whose types its scheme does not know without one, converting by apiVersion only).
func useConversionWebhook(ctx context.Context, t *testing.T, cfg *rest.Config, hook *conversionServer, name string) {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + hook.hostPort + "/convert"
	crd.Object["spec"].(map[string]any)["conversion"] = map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig":             map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(hook.caPEM)},
		},
	}
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("point CRD %s at the conversion webhook: %v", name, err)
	}
}
