package olm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// coreOSCRD is the EtcdCluster CRD as a cluster that ran CoreOS etcd-operator 0.9.4
// holds it today: CoreOS created it through apiextensions v1beta1 with one version,
// v1beta2, no schema and no status subresource; the API server serves such a CRD in v1
// with the whole object kept as written.
func coreOSCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "etcdclusters.etcd.database.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "etcd.database.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "etcdclusters", Singular: "etcdcluster",
				Kind: "EtcdCluster", ListKind: "EtcdClusterList", ShortNames: []string{"etcd"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta2", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

// TestCoreOSCRDReplacedInPlace: the migration guide's CRD step on a real API server. The
// CRD CoreOS left behind is replaced by ours with a server-side apply (as
// `kubectl apply --server-side --force-conflicts` does); the EtcdCluster CoreOS's users
// wrote, status included, reads back unchanged in v1beta2 and our status subresource now
// guards its status, so nothing of the running cluster's record is lost by the switch.
func TestCoreOSCRDReplacedInPlace(t *testing.T) {
	env := &envtest.Environment{CRDs: []*apiextensionsv1.CustomResourceDefinition{coreOSCRD()}, BinaryAssetsDirectory: testenv.EnvtestAssets(t)}
	cfg := testenv.StartEnvtest(t, env)
	c := crdClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	// A CoreOS-era object: spec and the status CoreOS's operator wrote in the same object.
	var cr unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(`
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: example, namespace: default}
spec:
  size: 3
  version: "3.6.16"
  pod:
    busyboxImage: busybox:1.28.0-glibc
    antiAffinity: true
status:
  phase: Running
  size: 3
  serviceName: example-client
  clientPort: 2379
  currentVersion: "3.6.16"
  members: {ready: [example-abcdefghij, example-bcdefghijk, example-cdefghijkl]}
`), &cr.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &cr); err != nil {
		t.Fatalf("create the CoreOS-era object: %v", err)
	}

	var ours *apiextensionsv1.CustomResourceDefinition
	for name, data := range installedCRDs(t) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if crd.Name == "etcdclusters.etcd.database.coreos.com" {
			ours = crd
		}
	}
	if ours == nil {
		t.Fatal("no etcdclusters CRD among ours")
	}
	ours.APIVersion, ours.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	// The conversion webhook serves only v1 reads; this step reads v1beta2, the storage
	// version, so the server never calls it.
	if err := c.Patch(ctx, ours, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
		t.Fatalf("server-side apply of our CRD over CoreOS's: %v", err)
	}

	var now apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: ours.Name}, &now); err != nil {
		t.Fatal(err)
	}
	if len(now.Spec.Versions) != 2 || now.Spec.Versions[0].Subresources == nil || now.Spec.Versions[0].Subresources.Status == nil {
		t.Fatalf("the CRD after the apply is not ours: %+v", now.Spec.Versions)
	}

	var got unstructured.Unstructured
	got.SetGroupVersionKind(cr.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cr), &got); err != nil {
		t.Fatalf("read back after the switch: %v", err)
	}
	for _, path := range [][]string{{"spec", "size"}, {"spec", "version"}, {"spec", "pod", "antiAffinity"}, {"status", "phase"}, {"status", "members", "ready"}} {
		want, _, _ := unstructured.NestedFieldNoCopy(cr.Object, path...)
		have, found, _ := unstructured.NestedFieldNoCopy(got.Object, path...)
		if !found || !equalJSON(t, want, have) {
			t.Errorf("%v after the switch: %v (found %v), was %v", path, have, found, want)
		}
	}

	// Our CRD's status subresource now applies: a write to the main resource leaves the
	// status alone, as the operator's own status writes expect. The API server takes up
	// a changed CRD's subresources asynchronously (its CRD handler rebuilds what it
	// serves after it sees the update), so this is polled: each try writes a status.phase
	// of its own through the main resource, and the subresource is in force once such a
	// write no longer lands.
	phase := "Running"
	try := 0
	poll.Eventually(t, 30*time.Second, 200*time.Millisecond, "our status subresource in force (a write to the main resource leaves status.phase alone)", func() error {
		try++
		probe := fmt.Sprintf("Probe%d", try)
		var cur unstructured.Unstructured
		cur.SetGroupVersionKind(cr.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(&cr), &cur); err != nil {
			return err
		}
		phase, _, _ = unstructured.NestedString(cur.Object, "status", "phase")
		if err := unstructured.SetNestedField(cur.Object, probe, "status", "phase"); err != nil {
			return err
		}
		if err := c.Update(ctx, &cur); err != nil {
			return fmt.Errorf("update after the switch: %w", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(&cr), &cur); err != nil {
			return err
		}
		if now, _, _ := unstructured.NestedString(cur.Object, "status", "phase"); now == probe {
			return fmt.Errorf("status.phase %q after a write to the main resource", now)
		}
		return nil
	})
	if try == 1 && phase != "Running" {
		t.Errorf("status.phase %q after the switch, was Running", phase)
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// crdClient is a client of the API server at cfg for core objects and CRDs; the
// custom resources the tests read as unstructured.
func crdClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
