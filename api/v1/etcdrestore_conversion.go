package v1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

var _ conversion.Convertible = &EtcdRestore{}

// ConvertTo converts this v1 EtcdRestore to the v1beta2 hub. The versions differ only in
// names, so no conversion data is needed.
func (src *EtcdRestore) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*v1beta2.EtcdRestore)
	in := src.DeepCopy() // dst shares nothing with src
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = v1beta2.EtcdRestoreSpec{
		EtcdCluster:       v1beta2.EtcdClusterRef{Name: in.Spec.EtcdCluster.Name},
		BackupStorageType: v1beta2.BackupStorageType(in.Spec.StorageType),
		RestoreSource:     restoreSourceFromV1(&in.Spec.StorageSource),
	}
	dst.Status = v1beta2.EtcdRestoreStatus{
		Succeeded:  in.Status.Succeeded,
		Reason:     in.Status.Reason,
		Conditions: in.Status.Conditions,
	}
	return nil
}

// ConvertFrom converts the v1beta2 hub to this v1 EtcdRestore.
func (dst *EtcdRestore) ConvertFrom(hub conversion.Hub) error {
	in := hub.(*v1beta2.EtcdRestore).DeepCopy() // dst shares nothing with the hub
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = EtcdRestoreSpec{
		EtcdCluster:   EtcdClusterRef{Name: in.Spec.EtcdCluster.Name},
		StorageType:   BackupStorageType(in.Spec.BackupStorageType),
		StorageSource: restoreSourceToV1(&in.Spec.RestoreSource),
	}
	dst.Status = EtcdRestoreStatus{
		Succeeded:  in.Status.Succeeded,
		Reason:     in.Status.Reason,
		Conditions: in.Status.Conditions,
	}
	return nil
}
