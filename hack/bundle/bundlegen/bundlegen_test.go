package bundlegen

import (
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func crd(name, kind string, versions map[string]bool, conversion *apiextensionsv1.CustomResourceConversion) crdFile {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Spec.Names.Kind = kind
	c.Spec.Conversion = conversion
	for _, v := range []string{"v1beta2", "v1"} {
		if served, ok := versions[v]; ok {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: served})
		}
	}
	return crdFile{file: name + ".yaml", crd: c}
}

func entry(name, version string) v1alpha1.CRDDescription {
	return v1alpha1.CRDDescription{Name: name, Version: version, DisplayName: "X", Description: "Y"}
}

// TestOwnedCRDs: the template must describe exactly the served CRD versions, each with
// texts; the kind always comes from the CRD.
func TestOwnedCRDs(t *testing.T) {
	const n = "etcdclusters.etcd.database.coreos.com"
	both := []crdFile{crd(n, "EtcdCluster", map[string]bool{"v1beta2": true, "v1": true}, nil)}
	for name, tc := range map[string]struct {
		tmpl []v1alpha1.CRDDescription
		crds []crdFile
		want string // "" = no error
	}{
		"all described":       {[]v1alpha1.CRDDescription{entry(n, "v1"), entry(n, "v1beta2")}, both, ""},
		"version undescribed": {[]v1alpha1.CRDDescription{entry(n, "v1beta2")}, both, "no owned entry for " + n + " version v1"},
		"unserved version": {[]v1alpha1.CRDDescription{entry(n, "v1beta2"), entry(n, "v1")},
			[]crdFile{crd(n, "EtcdCluster", map[string]bool{"v1beta2": true, "v1": false}, nil)}, "matches no served CRD version"},
		"stale entry":    {[]v1alpha1.CRDDescription{entry(n, "v1"), entry(n, "v1beta2"), entry("gone.example", "v1")}, both, "gone.example/v1 matches no served"},
		"duplicate":      {[]v1alpha1.CRDDescription{entry(n, "v1"), entry(n, "v1"), entry(n, "v1beta2")}, both, "appears twice"},
		"no description": {[]v1alpha1.CRDDescription{entry(n, "v1"), {Name: n, Version: "v1beta2", DisplayName: "X"}}, both, "needs a displayName and a description"},
		"wrong kind":     {[]v1alpha1.CRDDescription{entry(n, "v1"), {Name: n, Version: "v1beta2", Kind: "Etcd", DisplayName: "X", Description: "Y"}}, both, "says kind Etcd"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := ownedCRDs(tc.tmpl, tc.crds)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(out) != 2 || out[0].Version != "v1" || out[0].Kind != "EtcdCluster" {
					t.Errorf("owned %+v: want template order and the CRD's kind", out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestConversionWebhookNeedsDeclaring: a CRD converting through a webhook is refused
// until the CSV base declares the webhook for it, since OLM would not serve it.
func TestConversionWebhookNeedsDeclaring(t *testing.T) {
	const n = "etcdclusters.etcd.database.coreos.com"
	conv := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	crds := []crdFile{crd(n, "EtcdCluster", map[string]bool{"v1beta2": true, "v1": true}, conv)}
	csv := &v1alpha1.ClusterServiceVersion{}
	if err := checkConversionWebhooks(csv, crds); err == nil || !strings.Contains(err.Error(), "webhookdefinitions") {
		t.Errorf("undeclared conversion webhook: err %v", err)
	}
	csv.Spec.WebhookDefinitions = []v1alpha1.WebhookDescription{{Type: v1alpha1.ConversionWebhook, ConversionCRDs: []string{n}}}
	if err := checkConversionWebhooks(csv, crds); err != nil {
		t.Errorf("declared conversion webhook refused: %v", err)
	}
	none := []crdFile{crd(n, "EtcdCluster", map[string]bool{"v1beta2": true}, &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter})}
	if err := checkConversionWebhooks(&v1alpha1.ClusterServiceVersion{}, none); err != nil {
		t.Errorf("no webhook, yet: %v", err)
	}
}

func TestHasRegistryHost(t *testing.T) {
	for image, want := range map[string]bool{
		"etcd-operator:v0.1.0":               false,
		"team/etcd-operator:v0.1.0":          false,
		"registry.invalid/etcd-operator:v1":  true,
		"localhost:5000/etcd-operator:v1":    true,
		"localhost/etcd-operator:v1":         true,
		"etcd-operator@sha256:0123456789abc": false,
	} {
		if got := hasRegistryHost(image); got != want {
			t.Errorf("hasRegistryHost(%q) = %v, want %v", image, got, want)
		}
	}
}
