package etcdbackup

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// A backup of a cluster whose root Secret is not for it (another cluster's, or one not
// labelled for it) is refused before anything is dialled: the password would go to the
// cluster's members, whose image the tenant chooses. A Secret for the cluster passes.
func TestBackupRefusesRootSecretNotForTheCluster(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		want   string // "": accepted
	}{
		{"another cluster's", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "victim-etcd-root", Namespace: "default", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster", Name: "victim", UID: "uid-victim", Controller: &yes}}}}, "controlled by EtcdCluster victim"},
		{"not labelled", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "victim-etcd-root", Namespace: "default"}}, "has no label"},
		{"labelled for the cluster", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "victim-etcd-root", Namespace: "default",
			Labels: map[string]string{etcdv1beta2.AuthRootSecretForLabel: "tenant"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "default", UID: "uid-tenant", Annotations: map[string]string{
				etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue, etcdv1beta2.AuthRootSecretAnnotation: "victim-etcd-root"}}}
			fc := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(c, tc.secret).Build()
			r := &Reconciler{Client: fc, APIReader: fc}
			_, err := r.memberTarget(context.Background(), c, "")
			var be *backupstorage.Error
			if tc.want == "" {
				// Accepted: what stops it now is the missing pods, not the Secret.
				if err == nil || errors.As(err, &be) && be.Reason == etcdv1beta2.ReasonSecretError {
					t.Fatalf("a Secret for the cluster refused: %v", err)
				}
				return
			}
			if !errors.As(err, &be) || be.Reason != etcdv1beta2.ReasonSecretError || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "victim-etcd-root") {
				t.Fatalf("memberTarget: %v; want SecretError naming the Secret and %q", err, tc.want)
			}
		})
	}
}
