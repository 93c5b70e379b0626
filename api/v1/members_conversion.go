package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// membersToHub and membersFromHub copy status.members field by field: the two versions
// hold the same lists, v1beta2's ready/unready left as CoreOS wrote them.
func membersToHub(m MembersStatus) v1beta2.MembersStatus {
	out := v1beta2.MembersStatus{Ready: m.Ready, Unready: m.Unready, Leader: m.Leader}
	for _, d := range m.Details {
		out.Details = append(out.Details, v1beta2.MemberDetail{
			Name: d.Name, ID: d.ID, Role: v1beta2.MemberRole(d.Role), Version: d.Version,
			DBSize: copyQuantity(d.DBSize), DBSizeInUse: copyQuantity(d.DBSizeInUse), Healthy: d.Healthy,
		})
	}
	return out
}

func membersFromHub(m v1beta2.MembersStatus) MembersStatus {
	out := MembersStatus{Ready: m.Ready, Unready: m.Unready, Leader: m.Leader}
	for _, d := range m.Details {
		out.Details = append(out.Details, MemberDetail{
			Name: d.Name, ID: d.ID, Role: MemberRole(d.Role), Version: d.Version,
			DBSize: copyQuantity(d.DBSize), DBSizeInUse: copyQuantity(d.DBSizeInUse), Healthy: d.Healthy,
		})
	}
	return out
}

func versionSinceToHub(v *VersionSince) *v1beta2.VersionSince {
	if v == nil {
		return nil
	}
	return &v1beta2.VersionSince{Minor: v.Minor, RaftIndex: v.RaftIndex}
}

func versionSinceFromHub(v *v1beta2.VersionSince) *VersionSince {
	if v == nil {
		return nil
	}
	return &VersionSince{Minor: v.Minor, RaftIndex: v.RaftIndex}
}

func copyQuantity(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}
