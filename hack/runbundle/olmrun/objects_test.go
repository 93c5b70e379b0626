package olmrun

import (
	"slices"
	"testing"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/hack/catalog/olmimage"
)

func TestCatalogImageFor(t *testing.T) {
	for bundle, want := range map[string]string{
		"10.200.0.1:5000/etcd-operator-bundle:v0.2.0":  "10.200.0.1:5000/etcd-operator-bundle-run-catalog:v0.2.0",
		"example.com/team/etcd-operator-bundle:v0.1.0": "example.com/team/etcd-operator-bundle-run-catalog:v0.1.0",
		"example.com/bundle@sha256:" + sixtyFourHex:    "example.com/bundle-run-catalog:sha256-" + sixtyFourHex,
	} {
		got, err := CatalogImageFor(bundle)
		if err != nil || got != want {
			t.Errorf("CatalogImageFor(%q) = %q, %v; want %q", bundle, got, err, want)
		}
	}
	if _, err := CatalogImageFor("Not A Reference"); err == nil {
		t.Error("an invalid reference gave no error")
	}
}

const sixtyFourHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestOperatorGroupPicksTheWidestSupportedMode(t *testing.T) {
	all := []olmimage.InstallMode{{Type: "AllNamespaces", Supported: true}, {Type: "OwnNamespace", Supported: true}}
	own := []olmimage.InstallMode{{Type: "AllNamespaces", Supported: false}, {Type: "OwnNamespace", Supported: true}}
	multi := []olmimage.InstallMode{{Type: "MultiNamespace", Supported: true}}

	og, err := operatorGroup("ns", "pkg", all)
	if err != nil || len(og.Spec.TargetNamespaces) != 0 || groupMode(og) != v1alpha1.InstallModeTypeAllNamespaces {
		t.Errorf("AllNamespaces supported: %+v, %v", og, err)
	}
	og, err = operatorGroup("ns", "pkg", own)
	if err != nil || !slices.Equal(og.Spec.TargetNamespaces, []string{"ns"}) || groupMode(og) != v1alpha1.InstallModeTypeOwnNamespace {
		t.Errorf("only OwnNamespace supported: %+v, %v", og, err)
	}
	if _, err := operatorGroup("ns", "pkg", multi); err == nil {
		t.Error("neither mode supported: no error")
	}
}

func TestGroupMode(t *testing.T) {
	og := func(targets ...string) *operatorsv1.OperatorGroup {
		return &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: targets}}
	}
	sel := og()
	sel.Spec.Selector = &metav1.LabelSelector{}
	for _, tc := range []struct {
		og   *operatorsv1.OperatorGroup
		want v1alpha1.InstallModeType
	}{
		{og(), v1alpha1.InstallModeTypeAllNamespaces},
		{og("ns"), v1alpha1.InstallModeTypeOwnNamespace},
		{og("other"), v1alpha1.InstallModeTypeSingleNamespace},
		{og("ns", "other"), v1alpha1.InstallModeTypeMultiNamespace},
		{sel, v1alpha1.InstallModeTypeMultiNamespace},
	} {
		if got := groupMode(tc.og); got != tc.want {
			t.Errorf("targets %v selector %v: %s, want %s", tc.og.Spec.TargetNamespaces, tc.og.Spec.Selector, got, tc.want)
		}
	}
}

func TestBundlesAnnotationRoundTrip(t *testing.T) {
	cs, err := catalogSource("ns", "pkg", "img", []string{"b:1", "b:2"})
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := bundlesOf(cs)
	if err != nil || !ok || !slices.Equal(got, []string{"b:1", "b:2"}) {
		t.Fatalf("bundlesOf = %v, %v, %v", got, ok, err)
	}
	if cs.Spec.GrpcPodConfig == nil || cs.Spec.GrpcPodConfig.SecurityContextConfig != v1alpha1.Restricted {
		t.Error("the catalog pod is not asked to run restricted")
	}
	other := &v1alpha1.CatalogSource{}
	if _, ok, err := bundlesOf(other); ok || err != nil {
		t.Errorf("a CatalogSource without the annotation: ok %v err %v", ok, err)
	}
	other.Annotations = map[string]string{BundlesAnnotation: "not json"}
	if _, ok, err := bundlesOf(other); !ok || err == nil {
		t.Errorf("a damaged annotation: ok %v err %v", ok, err)
	}
}
