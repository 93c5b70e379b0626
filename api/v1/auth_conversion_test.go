package v1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// spec.auth becomes the v1beta2 annotations the controller reads, and comes back the same,
// with the v1 object's own annotations of those keys kept.
func TestAuthRoundTrip(t *testing.T) {
	for name, tc := range map[string]struct {
		auth        *Auth
		annotations map[string]string
		wantOn      bool
		wantSecret  string
	}{
		"unset":             {},
		"operator's secret": {auth: &Auth{}, wantOn: true, wantSecret: "a" + v1beta2.AuthRootSecretSuffix},
		"named secret":      {auth: &Auth{RootSecret: "root-pw"}, wantOn: true, wantSecret: "root-pw"},
		// As with every annotated field: the v1beta2 view is the annotation; v1 keeps it one.
		"unset with annotation": {annotations: map[string]string{v1beta2.AuthAnnotation: v1beta2.AuthEnabledValue},
			wantOn: true, wantSecret: "a" + v1beta2.AuthRootSecretSuffix},
		"set over annotations": {auth: &Auth{RootSecret: "root-pw"}, wantOn: true, wantSecret: "root-pw",
			annotations: map[string]string{v1beta2.AuthAnnotation: "x", v1beta2.AuthRootSecretAnnotation: "other"}},
	} {
		t.Run(name, func(t *testing.T) {
			in := &EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Annotations: tc.annotations},
				Spec: EtcdClusterSpec{Size: 3, Auth: tc.auth}}
			hub := &v1beta2.EtcdCluster{}
			if err := in.DeepCopy().ConvertTo(hub); err != nil {
				t.Fatal(err)
			}
			on, secret := v1beta2.AuthOf(hub)
			if on != tc.wantOn || secret != tc.wantSecret {
				t.Fatalf("v1beta2 AuthOf = %v, %q; want %v, %q", on, secret, tc.wantOn, tc.wantSecret)
			}
			if tc.auth != nil {
				if err := v1beta2.ValidateAuth(hub); err != nil {
					t.Fatalf("converted annotations do not validate: %v", err)
				}
			}
			back := &EtcdCluster{}
			if err := back.ConvertFrom(hub); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Spec.Auth, in.Spec.Auth) || !reflect.DeepEqual(back.Annotations, in.Annotations) {
				t.Fatalf("round trip: auth %+v annotations %v; want %+v %v", back.Spec.Auth, back.Annotations, in.Spec.Auth, in.Annotations)
			}
		})
	}
}

// Bad auth annotations on a v1beta2 cluster are named.
func TestValidateAuthAnnotations(t *testing.T) {
	for _, tc := range []struct {
		a    map[string]string
		fail bool
	}{
		{nil, false},
		{map[string]string{v1beta2.AuthAnnotation: v1beta2.AuthEnabledValue}, false},
		{map[string]string{v1beta2.AuthAnnotation: v1beta2.AuthEnabledValue, v1beta2.AuthRootSecretAnnotation: "root-pw"}, false},
		{map[string]string{v1beta2.AuthAnnotation: "true"}, true},
		{map[string]string{v1beta2.AuthAnnotation: v1beta2.AuthEnabledValue, v1beta2.AuthRootSecretAnnotation: "Bad_Name"}, true},
		{map[string]string{v1beta2.AuthRootSecretAnnotation: "root-pw"}, true},
	} {
		c := &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Annotations: tc.a}}
		if err := v1beta2.ValidateAuth(c); (err != nil) != tc.fail {
			t.Errorf("%v: ValidateAuth = %v, want failure %v", tc.a, err, tc.fail)
		}
	}
}
