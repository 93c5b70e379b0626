package v1beta2

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Which Secrets may be cluster prod's root Secret: the controller decides only when it is
// another etcd object; a Secret syncer's controller reference leaves it to the label.
func TestCheckRootSecretOwner(t *testing.T) {
	prod := &EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-prod"}}
	yes := true
	ctl := func(apiVersion, kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}}
	}
	label := map[string]string{AuthRootSecretForLabel: "prod"}
	for _, tc := range []struct {
		name    string
		secret  string
		labels  map[string]string
		refs    []metav1.OwnerReference
		refused string // "" accepted
	}{
		{"own name, controlled by the cluster", "prod-etcd-root", nil, ctl(GroupVersion.String(), "EtcdCluster", "prod", "uid-prod"), ""},
		{"own name, no owner, no label", "prod-etcd-root", nil, nil, "not this cluster's"},
		{"own name, no controller, labelled (released by a restore)", "prod-etcd-root", label, nil, ""},
		{"own name, labelled but another cluster controls it", "prod-etcd-root", label, ctl(GroupVersion.String(), "EtcdCluster", "prod", "uid-old"), "controlled by EtcdCluster prod"},
		{"own name, labelled, controlled by a syncer", "prod-etcd-root", label, ctl("external-secrets.io/v1beta1", "ExternalSecret", "x", "uid-x"), "not this cluster's"},
		{"another cluster's Secret, labelled", "other-etcd-root", label, ctl("etcd.database.coreos.com/v1", "EtcdCluster", "other", "uid-other"), "controlled by EtcdCluster other"},
		{"controlled by a restore", "mine", label, ctl(GroupVersion.String(), "EtcdRestore", "r", "uid-r"), "controlled by EtcdRestore r"},
		{"named, labelled, controlled by External Secrets", "mine", label, ctl("external-secrets.io/v1beta1", "ExternalSecret", "x", "uid-x"), ""},
		{"named, labelled, controlled by Sealed Secrets", "mine", label, ctl("bitnami.com/v1alpha1", "SealedSecret", "x", "uid-x"), ""},
		{"named, controlled by External Secrets, no label", "mine", nil, ctl("external-secrets.io/v1beta1", "ExternalSecret", "x", "uid-x"), "has no label"},
		{"named, labelled for another cluster", "mine", map[string]string{AuthRootSecretForLabel: "other"}, nil, "has no label"},
		{"named, owned by the cluster", "mine", nil, []metav1.OwnerReference{{APIVersion: GroupVersion.String(), Kind: "EtcdCluster", Name: "prod", UID: "uid-prod"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &metav1.ObjectMeta{Name: tc.secret, Namespace: "default", Labels: tc.labels, OwnerReferences: tc.refs}
			err := CheckRootSecretOwner(prod, s)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("got %v, want refused mentioning %q", err, tc.refused)
			}
		})
	}
}
