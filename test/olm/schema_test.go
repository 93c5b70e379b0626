package olm

import (
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestEveryFieldIsDescribed keeps the CRDs `kubectl explain`-able: every field of every
// served version carries a description (metadata is described by the API server itself).
func TestEveryFieldIsDescribed(t *testing.T) {
	for name, crd := range configCRDs(t) {
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				t.Errorf("%s %s has no schema", name, v.Name)
				continue
			}
			var missing []string
			visited := 0
			var walk func(s *apiextensionsv1.JSONSchemaProps, path string)
			walk = func(s *apiextensionsv1.JSONSchemaProps, path string) {
				for k, p := range s.Properties {
					visited++
					if p.Description == "" && !(path == "" && k == "metadata") {
						missing = append(missing, path+"."+k)
					}
					walk(&p, path+"."+k)
				}
				if s.Items != nil && s.Items.Schema != nil {
					walk(s.Items.Schema, path+"[]")
				}
				if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
					walk(s.AdditionalProperties.Schema, path+"{}")
				}
			}
			walk(v.Schema.OpenAPIV3Schema, "")
			if visited < 20 {
				t.Errorf("%s %s: only %d fields walked; the schema walk is broken", name, v.Name, visited)
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("%s %s: fields without a description: %v", name, v.Name, missing)
			}
		}
	}
}
