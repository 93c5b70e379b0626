package olm

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/manifests"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// TestCRDUpgradeOnAPIServer upgrades the CRDs on a real kube-apiserver the way OLM does
// when a subscription moves from the newest released bundle to bundle/: the released
// CRDs are installed and one object of each kind created from the released CSV's
// alm-examples; the new CRDs must pass bundlegen.CheckStoredVersions against the CRDs
// as the server reports them (status.storedVersions included), and a CRD that drops a
// stored version must fail it and be refused by the server as well. Then the new CRDs
// are applied, with their conversion webhook pointed at an in-process webhook server
// (as OLM points it at its Service, with its CA), and every object must read back, in
// the storage version unchanged and in every other served version through the webhook;
// writing an object back in another version and reading it in the storage version must
// give what was there (a lossless round trip).
func TestCRDUpgradeOnAPIServer(t *testing.T) {
	versions := releasedVersions(t)
	prevDir := filepath.Join(releasedDir, versions[len(versions)-1])
	prev, err := manifests.GetBundleFromDir(prevDir)
	if err != nil {
		t.Fatal(err)
	}
	next := loadCommitted(t)
	if len(prev.V1CRDs) == 0 || len(next.V1CRDs) == 0 {
		t.Fatalf("CRDs: released %d, bundle/ %d", len(prev.V1CRDs), len(next.V1CRDs))
	}

	var initial []*apiextensionsv1.CustomResourceDefinition
	for _, c := range prev.V1CRDs {
		initial = append(initial, c.DeepCopy())
	}
	env := &envtest.Environment{CRDs: initial, BinaryAssetsDirectory: testenv.EnvtestAssets(t)}
	cfg := testenv.StartEnvtest(t, env)
	c := crdClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)

	// One object of each kind, as a 0.1.0 user would have.
	const ns = "upgrade"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var examples []map[string]any
	if err := json.Unmarshal([]byte(prev.CSV.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatal(err)
	}
	stored := map[string]*unstructured.Unstructured{} // kind -> object as first read back
	for _, ex := range examples {
		u := &unstructured.Unstructured{Object: ex}
		u.SetNamespace(ns)
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("create released example %s: %v", u.GetKind(), err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
			t.Fatal(err)
		}
		stored[u.GetKind()] = got
	}
	for _, crd := range prev.V1CRDs {
		if stored[crd.Spec.Names.Kind] == nil {
			t.Fatalf("the released alm-examples have no %s", crd.Spec.Names.Kind)
		}
	}

	// The stored-versions rule, against what the server reports.
	installed := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range prev.V1CRDs {
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
			t.Fatal(err)
		}
		if want := bundlegen.StorageVersions(crd); !reflect.DeepEqual(live.Status.StoredVersions, want) {
			t.Errorf("CRD %s storedVersions %v, want the released storage version %v", crd.Name, live.Status.StoredVersions, want)
		}
		installed[crd.Name] = live
	}
	for _, crd := range next.V1CRDs {
		live, ok := installed[crd.Name]
		if !ok {
			continue // a new CRD: nothing stored yet
		}
		if err := bundlegen.CheckStoredVersions(live, crd); err != nil {
			t.Errorf("bundle/ CRD fails OLM's stored-versions rule: %v", err)
		}
		bad := dropVersion(crd, live.Status.StoredVersions[0])
		if err := bundlegen.CheckStoredVersions(live, bad); err == nil {
			t.Errorf("CRD %s without stored version %s passes the stored-versions check", crd.Name, live.Status.StoredVersions[0])
		}
		upd := live.DeepCopy()
		upd.Spec = bad.Spec
		upd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		err := c.Update(ctx, upd)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "storedVersions") {
			t.Errorf("the API server accepted (or refused for another reason) CRD %s without stored version %s: %v", crd.Name, live.Status.StoredVersions[0], err)
		}
	}
	if t.Failed() {
		return
	}

	// Upgrade. OLM replaces a conversion webhook's clientConfig with its own Service and
	// CA; here the in-process server's URL and CA take their place.
	var converting []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range next.V1CRDs {
		if conv := crd.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
			converting = append(converting, crd)
		}
	}
	var hook *conversionServer
	if len(converting) > 0 {
		hook = startConversionWebhook(t, cfg)
	}
	for _, crd := range next.V1CRDs {
		want := crd.DeepCopy()
		if conv := want.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
			p := "/"
			if s := conv.Webhook.ClientConfig.Service; s != nil && s.Path != nil {
				p = *s.Path
			}
			url := "https://" + hook.hostPort + p
			conv.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: hook.caPEM}
		}
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
			if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if err := c.Create(ctx, want); err != nil {
				t.Fatalf("create new CRD %s: %v", crd.Name, err)
			}
			continue
		}
		live.Spec = want.Spec
		live.Labels, live.Annotations = want.Labels, want.Annotations
		if err := c.Update(ctx, live); err != nil {
			t.Fatalf("upgrade CRD %s: %v", crd.Name, err)
		}
	}

	roundTrips, wantRoundTrips := 0, 0
	for _, crd := range next.V1CRDs {
		obj := stored[crd.Spec.Names.Kind]
		if obj == nil {
			continue
		}
		storage := bundlegen.StorageVersions(crd)[0]
		for _, v := range crd.Spec.Versions {
			if v.Served && v.Name != storage {
				wantRoundTrips++
			}
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			got := readAs(ctx, t, c, obj, v.Name)
			if got == nil {
				continue
			}
			if got.GetAPIVersion() != crd.Spec.Group+"/"+v.Name || got.GetName() != obj.GetName() || got.GetUID() != obj.GetUID() {
				t.Errorf("%s read as %s: apiVersion %s name %s uid %s", crd.Spec.Names.Kind, v.Name, got.GetAPIVersion(), got.GetName(), got.GetUID())
			}
			if v.Name == storage && obj.GetAPIVersion() == got.GetAPIVersion() {
				if !reflect.DeepEqual(got.Object["spec"], obj.Object["spec"]) {
					t.Errorf("%s in %s changed across the upgrade:\n got %v\nwant %v", crd.Spec.Names.Kind, v.Name, got.Object["spec"], obj.Object["spec"])
				}
				continue
			}
			if got.Object["spec"] == nil {
				t.Errorf("%s read as %s has no spec", crd.Spec.Names.Kind, v.Name)
			}
			// Round trip: write it back in this version, read it in the stored one.
			if err := c.Update(ctx, got); err != nil {
				t.Errorf("write %s back as %s: %v", crd.Spec.Names.Kind, v.Name, err)
				continue
			}
			back := readAs(ctx, t, c, obj, obj.GroupVersionKind().Version)
			if back != nil && !reflect.DeepEqual(back.Object["spec"], obj.Object["spec"]) {
				t.Errorf("%s written as %s reads back differently as %s:\n got %v\nwant %v", crd.Spec.Names.Kind, v.Name, obj.GroupVersionKind().Version, back.Object["spec"], obj.Object["spec"])
			} else if back != nil {
				roundTrips++
			}
		}
	}
	if roundTrips != wantRoundTrips {
		t.Errorf("%d of %d objects read and written in a non-storage version round-tripped", roundTrips, wantRoundTrips)
	}
	t.Logf("%d objects round-tripped through the conversion webhook", roundTrips)

	// Every example the new bundle offers is accepted, in whichever version it is written.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "examples"}}); err != nil {
		t.Fatal(err)
	}
	var nextExamples []map[string]any
	if err := json.Unmarshal([]byte(next.CSV.Annotations["alm-examples"]), &nextExamples); err != nil {
		t.Fatal(err)
	}
	for _, ex := range nextExamples {
		u := &unstructured.Unstructured{Object: ex}
		u.SetNamespace("examples")
		if err := c.Create(ctx, u); err != nil {
			t.Errorf("bundle/ alm-example %s %s rejected after the upgrade: %v", u.GetAPIVersion(), u.GetKind(), err)
		}
	}

	// The storage version did not change, so nothing was stored in another version.
	for _, crd := range next.V1CRDs {
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
			t.Fatal(err)
		}
		if old, ok := installed[crd.Name]; ok && reflect.DeepEqual(bundlegen.StorageVersions(crd), old.Status.StoredVersions) &&
			!reflect.DeepEqual(live.Status.StoredVersions, old.Status.StoredVersions) {
			t.Errorf("CRD %s storedVersions %v after the upgrade, want %v", crd.Name, live.Status.StoredVersions, old.Status.StoredVersions)
		}
	}
}

// readAs gets obj in another version of its group, polling while the API server has
// not yet started serving that version after the CRD update (it answers NotFound until
// then). Other errors end the poll and fail the test.
func readAs(ctx context.Context, t *testing.T, c client.Client, obj *unstructured.Unstructured, version string) *unstructured.Unstructured {
	t.Helper()
	gvk := obj.GroupVersionKind()
	gvk.Version = version
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(gvk)
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = c.Get(ctx, client.ObjectKeyFromObject(obj), got)
		if last == nil {
			return true, nil
		}
		// NotFound and "no matches for kind" both mean the version is not served yet.
		if apierrors.IsNotFound(last) || meta.IsNoMatchError(last) {
			return false, nil
		}
		return false, last
	})
	if err != nil {
		t.Errorf("read %s %s as %s: %v (last: %v)", gvk.Kind, obj.GetName(), version, err, last)
		return nil
	}
	return got
}

// dropVersion returns a copy of crd without version v, keeping a storage version (the
// first remaining, or a renamed copy of v if it was the only one) so that the only
// thing wrong with it is the dropped stored version.
func dropVersion(crd *apiextensionsv1.CustomResourceDefinition, v string) *apiextensionsv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	out.Spec.Versions = nil
	for _, ver := range crd.Spec.Versions {
		if ver.Name != v {
			ver.Storage = false
			out.Spec.Versions = append(out.Spec.Versions, *ver.DeepCopy())
		}
	}
	if len(out.Spec.Versions) == 0 {
		ver := *crd.Spec.Versions[0].DeepCopy()
		ver.Name = fmt.Sprintf("%sx", v)
		out.Spec.Versions = append(out.Spec.Versions, ver)
	}
	out.Spec.Versions[0].Storage = true
	out.Spec.Versions[0].Served = true
	return out
}
