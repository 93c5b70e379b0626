package etcdbackup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The backup pod of a cluster's members gets the members' pull secrets, priority class
// and tolerations.
func TestBackupPodInheritsFromCluster(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Annotations: map[string]string{
		etcdv1beta2.PodImagePullSecretsAnnotation:  `[{"name":"regcred"}]`,
		etcdv1beta2.PodPriorityClassNameAnnotation: "etcd-critical",
	}}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 1, Pod: &etcdv1beta2.PodPolicy{
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}}}
	eb := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Spec: etcdv1beta2.EtcdBackupSpec{
		StorageType:  etcdv1beta2.BackupStorageTypePVC,
		BackupSource: etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "db"}}}}
	pod := (&Reconciler{}).backupPod(eb, &backupTarget{Endpoints: []string{"http://10.1.2.3:2379"}, Cluster: "c", Inherit: render.InheritedFrom(c)})
	s := pod.Spec
	if len(s.ImagePullSecrets) != 1 || s.ImagePullSecrets[0].Name != "regcred" || s.PriorityClassName != "etcd-critical" ||
		len(s.Tolerations) != 1 || s.Tolerations[0].Key != "dedicated" {
		t.Errorf("backup pod %+v", s)
	}
	// External endpoints: nothing to inherit.
	pod = (&Reconciler{}).backupPod(eb, &backupTarget{Endpoints: []string{"http://10.1.2.3:2379"}})
	if len(pod.Spec.ImagePullSecrets) != 0 || pod.Spec.PriorityClassName != "" || len(pod.Spec.Tolerations) != 0 {
		t.Errorf("backup pod of external endpoints %+v", pod.Spec)
	}
}
