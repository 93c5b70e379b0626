package olm

import (
	"context"
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
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
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
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{chartDir + "/crds"},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: testenv.EnvtestAssets(t),
	}
	cfg := testenv.StartEnvtest(t, env)
	w := &warnings{}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = w
	dc, err := dynamic.NewForConfig(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	policy := readObjects(t, readFile(t, filepath.Join(root, "config/admission/size_warnings.yaml")))
	for _, o := range policy {
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1",
			Resource: map[string]string{"ValidatingAdmissionPolicy": "validatingadmissionpolicies",
				"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}[o.GetKind()]}
		if _, err := dc.Resource(gvr).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", o.GetKind(), err)
		}
	}

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
	r := mustRender(t, nil)
	for _, want := range policy {
		found := false
		for _, o := range r.objs {
			if o.GetKind() != want.GetKind() {
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
			t.Errorf("the chart has no %s", want.GetKind())
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
