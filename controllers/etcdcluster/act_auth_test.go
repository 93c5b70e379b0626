package etcdcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// Once auth is on, a deleted root Secret is not made again (a new password would not be
// root's), and the reconcile stops before planning: without credentials etcd lists no
// members. A refused password stops it too.
func TestAuthRootSecretGoneAfterAuthOn(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", UID: "uid-a",
		Annotations: map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"},
		Status: etcdv1beta2.EtcdClusterStatus{Conditions: []etcdv1beta2.ClusterCondition{
			{Type: etcdv1beta2.ClusterConditionAuthEnabled, Status: corev1.ConditionTrue, Reason: etcdv1beta2.ReasonAuthEnabled}}}}
	fc := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(c).Build()
	r := newTestClusterReconciler(t, fc, record.NewFakeRecorder(10), time.Now)
	a := r.observeAuth(context.Background(), c)
	if a.secretErr == nil || a.password != "" || a.blocking() == nil {
		t.Fatalf("secret error %v, password set %v, blocking %v; want an error, none, blocking", a.secretErr, a.password != "", a.blocking())
	}
	var s corev1.Secret
	if err := fc.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "a-etcd-root"}, &s); err == nil {
		t.Fatal("the root Secret was made again after auth was on")
	}
	if (authObservation{wanted: true, rejected: true, secret: "x"}).blocking() == nil {
		t.Fatal("a refused password does not stop the reconcile")
	}
	if (authObservation{wanted: true, secret: "x", secretErr: errors.New("gone")}).blocking() != nil {
		t.Fatal("a Secret problem before auth is on stops the reconcile (auth is off: the operator can work)")
	}
}

// The root Secret: the operator creates its own (random password, owned by the cluster,
// announced without the password), reads a named one, and says what is wrong with a
// missing one, one without the key, or one of its name it did not create.
func TestObserveAuthRootSecret(t *testing.T) {
	cluster := func(annotations map[string]string) *etcdv1beta2.EtcdCluster {
		return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", UID: "uid-a", Annotations: annotations},
			Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}}
	}
	on := map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
	named := map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue, etcdv1beta2.AuthRootSecretAnnotation: "mine"}
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: data}
	}
	for _, tc := range []struct {
		name      string
		ann       map[string]string
		objs      []client.Object
		wantPW    string // "*": any non-empty
		wantErr   string
		wantEvent bool
	}{
		{name: "no auth", ann: nil},
		{name: "operator's Secret created", ann: on, wantPW: "*", wantEvent: true},
		{name: "named Secret", ann: named, objs: []client.Object{forA(secret("mine", map[string][]byte{"password": []byte("pw1")}))}, wantPW: "pw1"},
		{name: "named Secret owned by the cluster", ann: named, objs: []client.Object{ownedBy(secret("mine", map[string][]byte{"password": []byte("pw1")}), "EtcdCluster", "a", "uid-a", false)}, wantPW: "pw1"},
		// Hostile: a tenant names a Secret that is not for their cluster.
		{name: "named Secret without the label", ann: named, objs: []client.Object{secret("mine", map[string][]byte{"password": []byte("pw1")})},
			wantErr: "has no label " + etcdv1beta2.AuthRootSecretForLabel + "=a"},
		{name: "named Secret labelled for another cluster", ann: named, objs: []client.Object{labelled(secret("mine", map[string][]byte{"password": []byte("pw1")}), "victim")},
			wantErr: "has no label"},
		{name: "another cluster's root Secret", ann: map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue, etcdv1beta2.AuthRootSecretAnnotation: "victim-etcd-root"},
			objs:    []client.Object{forA(ownedBy(secret("victim-etcd-root", map[string][]byte{"password": []byte("victim-pw")}), "EtcdCluster", "victim", "uid-victim", true))},
			wantErr: "is controlled by EtcdCluster victim"},
		{name: "the operator's Secret named explicitly", ann: map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue, etcdv1beta2.AuthRootSecretAnnotation: "a-etcd-root"},
			objs: []client.Object{ownedBy(secret("a-etcd-root", map[string][]byte{"password": []byte("pw2")}), "EtcdCluster", "a", "uid-a", true)}, wantPW: "pw2"},
		{name: "named Secret missing", ann: named, wantErr: "not found"},
		{name: "named Secret without the key", ann: named, objs: []client.Object{forA(secret("mine", map[string][]byte{"pass": []byte("x")}))}, wantErr: `no key "password"`},
		{name: "a Secret of the operator's name it did not create", ann: on,
			objs: []client.Object{secret("a-etcd-root", map[string][]byte{"password": []byte("planted")})}, wantErr: "not this cluster's"},
		{name: "a labelled Secret of the operator's name without controller (one a failed restore let go of)", ann: on,
			objs: []client.Object{forA(secret("a-etcd-root", map[string][]byte{"password": []byte("kept")}))}, wantPW: "kept"},
		{name: "named Secret a Secret syncer controls, labelled", ann: named,
			objs: []client.Object{forA(ownedBy(secret("mine", map[string][]byte{"password": []byte("synced")}), "ExternalSecret", "mine", "uid-es", true))}, wantPW: "synced"},
		{name: "invalid annotation", ann: map[string]string{etcdv1beta2.AuthAnnotation: "yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture.Scheme()
			c := cluster(tc.ann)
			fc := fake.NewClientBuilder().WithScheme(s).WithObjects(append([]client.Object{c}, tc.objs...)...).Build()
			rec := record.NewFakeRecorder(10)
			r := newTestClusterReconciler(t, fc, rec, time.Now)
			a := r.observeAuth(context.Background(), c)
			if tc.wantPW == "*" && len(a.password) < 24 || tc.wantPW != "*" && a.password != tc.wantPW {
				t.Fatalf("password %q, want %q (err %v)", a.password, tc.wantPW, a.secretErr)
			}
			if tc.wantErr == "" && a.secretErr != nil || tc.wantErr != "" && (a.secretErr == nil || !strings.Contains(a.secretErr.Error(), tc.wantErr)) {
				t.Fatalf("secret error %v, want %q", a.secretErr, tc.wantErr)
			}
			if tc.ann[etcdv1beta2.AuthAnnotation] == "yes" && a.specErr == nil {
				t.Fatal("invalid annotation not reported")
			}
			user, _ := a.credentials()
			if (a.password != "") != (user == etcdadmin.RootUser) {
				t.Fatalf("credentials user %q with password set %v", user, a.password != "")
			}
			events := drain(rec)
			if got := len(events) > 0; got != tc.wantEvent {
				t.Fatalf("events %v, want some: %v", events, tc.wantEvent)
			}
			for _, ev := range events {
				if a.password != "" && strings.Contains(ev, a.password) {
					t.Fatalf("event %q holds the password", ev)
				}
			}
			if tc.wantEvent {
				var got corev1.Secret
				if err := fc.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "a-etcd-root"}, &got); err != nil {
					t.Fatal(err)
				}
				if !metav1.IsControlledBy(&got, c) || got.Labels["etcd_cluster"] == "" && len(got.Labels) == 0 {
					t.Fatalf("created Secret owners %v labels %v", got.OwnerReferences, got.Labels)
				}
				// Read again, it is the same password: created once.
				if again := r.observeAuth(context.Background(), c); again.password != a.password {
					t.Fatal("the password changed on the next observation")
				}
			}
		})
	}
}

func labelled(s *corev1.Secret, cluster string) *corev1.Secret {
	s.Labels = map[string]string{etcdv1beta2.AuthRootSecretForLabel: cluster}
	return s
}

func forA(s *corev1.Secret) *corev1.Secret { return labelled(s, "a") }

func ownedBy(s *corev1.Secret, kind, name, uid string, controller bool) *corev1.Secret {
	s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: kind, Name: name,
		UID: types.UID(uid), Controller: &controller})
	return s
}
