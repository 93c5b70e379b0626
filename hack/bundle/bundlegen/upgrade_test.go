package bundlegen

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func versionedCRD(name string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0})
	}
	return c
}

// TestCheckStoredVersions: a new CRD may add versions and stop serving old ones, but must
// keep every stored version.
func TestCheckStoredVersions(t *testing.T) {
	const n = "etcdclusters.etcd.database.coreos.com"
	installed := versionedCRD(n, "v1beta2")
	installed.Status.StoredVersions = []string{"v1beta2"}
	unserved := versionedCRD(n, "v1", "v1beta2")
	unserved.Spec.Versions[1].Served = false
	for name, tc := range map[string]struct {
		next *apiextensionsv1.CustomResourceDefinition
		want string // "" = allowed
	}{
		"same":                   {versionedCRD(n, "v1beta2"), ""},
		"v1 added":               {versionedCRD(n, "v1beta2", "v1"), ""},
		"v1 becomes storage":     {versionedCRD(n, "v1", "v1beta2"), ""},
		"stored kept unserved":   {unserved, ""},
		"stored version dropped": {versionedCRD(n, "v1"), "drops version v1beta2"},
		"other CRD":              {versionedCRD("etcdbackups.etcd.database.coreos.com", "v1beta2"), "different CRD"},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckStoredVersions(installed, tc.next)
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Two stored versions (a cluster that lived through a storage switch): both count.
	installed.Status.StoredVersions = []string{"v1beta2", "v1"}
	if err := CheckStoredVersions(installed, versionedCRD(n, "v1beta2")); err == nil || !strings.Contains(err.Error(), "drops version v1") {
		t.Errorf("second stored version dropped: err %v", err)
	}
	if got := StorageVersions(versionedCRD(n, "v1", "v1beta2")); !reflect.DeepEqual(got, []string{"v1"}) {
		t.Errorf("StorageVersions = %v", got)
	}
}
