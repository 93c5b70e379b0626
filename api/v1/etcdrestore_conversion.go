package v1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

var _ conversion.Convertible = &EtcdRestore{}

// ConvertTo converts this v1 EtcdRestore to the v1beta2 hub. Besides names, the
// versions differ in spec.backupRef and spec.select, which v1beta2 stores as annotations.
func (src *EtcdRestore) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*v1beta2.EtcdRestore)
	in := src.DeepCopy() // dst shares nothing with src
	dst.ObjectMeta = in.ObjectMeta
	var lost restoreV1Data
	selectionToAnnotations(&dst.ObjectMeta, &in.Spec, &lost)
	dst.Spec = v1beta2.EtcdRestoreSpec{
		EtcdCluster:       v1beta2.EtcdClusterRef{Name: in.Spec.EtcdCluster.Name},
		BackupStorageType: v1beta2.BackupStorageType(in.Spec.StorageType),
		RestoreSource:     restoreSourceFromV1(&in.Spec.StorageSource),
	}
	dst.Status = v1beta2.EtcdRestoreStatus{
		Succeeded:  in.Status.Succeeded,
		Reason:     in.Status.Reason,
		Backup:     chosenBackupToV1beta2(in.Status.Backup),
		Conditions: in.Status.Conditions,
	}
	return putConversionData(&dst.ObjectMeta, &lost)
}

// ConvertFrom converts the v1beta2 hub to this v1 EtcdRestore.
func (dst *EtcdRestore) ConvertFrom(hub conversion.Hub) error {
	in := hub.(*v1beta2.EtcdRestore).DeepCopy() // dst shares nothing with the hub
	dst.ObjectMeta = in.ObjectMeta
	var kept restoreV1Data
	if err := popConversionData(&dst.ObjectMeta, &kept); err != nil {
		return err
	}
	dst.Spec = EtcdRestoreSpec{
		EtcdCluster:   EtcdClusterRef{Name: in.Spec.EtcdCluster.Name},
		StorageType:   BackupStorageType(in.Spec.BackupStorageType),
		StorageSource: restoreSourceToV1(&in.Spec.RestoreSource),
	}
	dst.Spec.BackupRef, dst.Spec.Select = selectionFromAnnotations(&dst.ObjectMeta, kept)
	dst.Status = EtcdRestoreStatus{
		Succeeded:  in.Status.Succeeded,
		Reason:     in.Status.Reason,
		Backup:     chosenBackupToV1(in.Status.Backup),
		Conditions: in.Status.Conditions,
	}
	return nil
}
