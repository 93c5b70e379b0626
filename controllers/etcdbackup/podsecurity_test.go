//go:build integration

package etcdbackup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestBackupPodAdmittedUnderRestrictedPodSecurity creates the pod of a PVC backup in a
// namespace that enforces the Pod Security "restricted" profile, on a real API server.
func TestBackupPodAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	fixture.AdmittedUnderRestricted(t, func(ns string) map[string]*corev1.Pod {
		eb := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns}, Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{"http://plain-client:2379"}, StorageType: etcdv1beta2.BackupStorageTypePVC,
			BackupSource: etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "db"}}}}
		return map[string]*corev1.Pod{"backup pod": (&Reconciler{}).backupPod(eb, &backupTarget{Endpoints: []string{"http://10.1.2.3:2379"}, Cluster: "plain"})}
	})
}
