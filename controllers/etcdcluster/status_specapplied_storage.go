package etcdcluster

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// How the SpecApplied condition treats the claim spec now that a larger storage request
// reaches running members (act_storage_decide.go): the claim spec is compared without its storage
// request, and the storage step's report joins the condition.

// keyClaimSpecApartFromStorage is the spec fingerprint's entry for the claim spec without
// its storage request. Pods created before it existed carry only the whole claim spec's
// hash (under fieldClaimSpec).
const keyClaimSpecApartFromStorage = fieldClaimSpec + "/apart-from-storage"

// claimSpecApartFromStorage is the claim spec with its storage request left out.
func claimSpecApartFromStorage(spec *corev1.PersistentVolumeClaimSpec) *corev1.PersistentVolumeClaimSpec {
	if spec == nil {
		return nil
	}
	out := spec.DeepCopy()
	delete(out.Resources.Requests, corev1.ResourceStorage)
	if len(out.Resources.Requests) == 0 {
		out.Resources.Requests = nil
	}
	return out
}

// claimSpecWithStorage is the claim spec with its storage request set to size.
func claimSpecWithStorage(spec *corev1.PersistentVolumeClaimSpec, size resource.Quantity) *corev1.PersistentVolumeClaimSpec {
	out := spec.DeepCopy()
	if out.Resources.Requests == nil {
		out.Resources.Requests = corev1.ResourceList{}
	}
	out.Resources.Requests[corev1.ResourceStorage] = size
	return out
}

// claimSpecStale says whether the claim spec, apart from its storage request, differs
// from the one a pod was created with. A pod fingerprinted apart from storage is compared
// on that; an older pod's whole-spec hash is compared with the current spec, and failing
// that with the current spec at the size its claim was created with, so that a grown
// storage request alone is no change here.
func claimSpecStale(c *etcdv1beta2.EtcdCluster, current, recorded map[string]string, claimCreatedWith string) bool {
	if h, ok := recorded[keyClaimSpecApartFromStorage]; ok {
		return current[keyClaimSpecApartFromStorage] != h
	}
	if current[fieldClaimSpec] == recorded[fieldClaimSpec] {
		return false
	}
	if recorded[fieldClaimSpec] == "" || c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return true
	}
	size, err := resource.ParseQuantity(claimCreatedWith)
	if err != nil {
		return true
	}
	return hashValue(claimSpecWithStorage(c.Spec.Pod.PersistentVolumeClaimSpec, size)) != recorded[fieldClaimSpec]
}

// withStorage is SpecApplied when the storage step has something to say, with or
// without stale pod fields (order, and their parts "field (pods)").
func withStorage(order, parts []string, st storageReport) specAppliedReport {
	reason := st.Reason
	var msg []string
	if len(order) > 0 {
		if reason != etcdv1beta2.ReasonExpansionNotAllowed {
			reason = etcdv1beta2.ReasonAppliesToNewMembersOnly
		}
		msg = append(msg, "changed after these members were created; running members keep what they were created with "+
			"and are not restarted, the change applies to members created from now on: "+strings.Join(parts, "; "))
	}
	msg = append(msg, st.Message)
	// Claims merely expanding leave the key empty: the condition says so, no warning
	// event does (each expansion has its own normal event).
	key := strings.Join(order, ",")
	if st.EventKey != "" {
		key = strings.TrimPrefix(key+";"+st.EventKey, ";")
	}
	return specAppliedReport{Reason: reason, Message: cut(strings.Join(msg, "; "), maxHealthMessage), EventKey: key}
}
