package etcdcluster

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Storage of running members: a larger spec.pod.persistentVolumeClaimSpec storage
// request is applied to the members' existing claims where their StorageClass allows
// volume expansion; everything else about a claim applies to new members only. This file
// decides (pure); act_storage.go reads the claims and classes and patches.

// AnnotationRequestedStorageAtCreation on a member claim records the storage request it
// had before the operator first expanded it. Pods created by an operator without
// storage expansion fingerprinted the whole claim spec, size included; this is the size
// to compare them with once their claim has grown.
const AnnotationRequestedStorageAtCreation = "etcd.database.coreos.com/requested-storage-at-creation"

// claimState is what the storage step reads off one member claim the cluster controls.
type claimState struct {
	Name string
	// Class is spec.storageClassName; "" for none (a claim bound to a PV by hand, or
	// created when the cluster had no default class).
	Class    string
	Bound    bool
	Request  resource.Quantity // spec.resources.requests.storage
	Capacity resource.Quantity // status.capacity.storage; zero until bound
	// Resizing are the claim's True conditions (FileSystemResizePending, Resizing, ...),
	// as the resizer and kubelet report them.
	Resizing []string
	// RequestedAtCreation is AnnotationRequestedStorageAtCreation, "" without one.
	RequestedAtCreation string
}

// storageClasses maps each StorageClass that exists to its allowVolumeExpansion.
type storageClasses map[string]bool

// storageDecision is what to do about the members' claims and what to report.
type storageDecision struct {
	// Expand are the claims to patch to Want, by name.
	Expand []string
	Want   resource.Quantity
	Report storageReport
}

// storageReport is the storage part of the SpecApplied condition.
type storageReport struct {
	// Settled: every claim has the requested size, or there is nothing to judge.
	Settled bool
	// Reason is the most pressing of ReasonExpansionNotAllowed,
	// ReasonAppliesToNewMembersOnly (a smaller request) and ReasonClaimsExpanding.
	Reason  string
	Message string
	// EventKey changes when a new set of claims cannot take the size (for one event each);
	// "" while claims merely expand.
	EventKey string
	// CreatedWith maps each claim to the storage request it was created with, as far as
	// is known; status_specapplied.go compares pods created by older operators on it.
	CreatedWith map[string]string
}

// decideStorage compares the members' claims with the requested size. want is nil when
// the spec asks for no storage size (no claim spec, or one without a storage request):
// then nothing is judged.
func decideStorage(want *resource.Quantity, claims []claimState, classes storageClasses) storageDecision {
	d := storageDecision{Report: storageReport{Settled: true, CreatedWith: map[string]string{}}}
	sorted := append([]claimState(nil), claims...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, cl := range sorted {
		if cl.RequestedAtCreation != "" {
			d.Report.CreatedWith[cl.Name] = cl.RequestedAtCreation
		} else if !cl.Request.IsZero() {
			d.Report.CreatedWith[cl.Name] = cl.Request.String()
		}
	}
	if want == nil || want.IsZero() || len(sorted) == 0 {
		return d
	}
	d.Want = want.DeepCopy()

	var (
		notAllowed = map[string][]string{} // why → claims
		whyOrder   []string
		smaller    []string // claims keeping a larger size than asked
		unbound    []string // below the size, expanded once bound
		atSize     int
		progress   []string // "c-1: FileSystemResizePending"
	)
	refuse := func(why, claim string) {
		if _, seen := notAllowed[why]; !seen {
			whyOrder = append(whyOrder, why)
		}
		notAllowed[why] = append(notAllowed[why], claim)
	}
	for _, cl := range sorted {
		switch cmp := cl.Request.Cmp(*want); {
		case cmp > 0:
			// The API server refuses to shrink a claim; only new members get less.
			smaller = append(smaller, fmt.Sprintf("%s keeps %s", cl.Name, cl.Request.String()))
		case cmp < 0:
			switch allow, exists := classes[cl.Class]; {
			case cl.Class == "":
				refuse("it has no StorageClass", cl.Name)
			case !exists:
				refuse(fmt.Sprintf("its StorageClass %q is gone", cl.Class), cl.Name)
			case !allow:
				refuse(fmt.Sprintf("StorageClass %q does not allow volume expansion", cl.Class), cl.Name)
			case !cl.Bound:
				// Only a bound claim may grow; it is expanded once it is.
				unbound = append(unbound, cl.Name)
			default:
				d.Expand = append(d.Expand, cl.Name)
				progress = append(progress, cl.Name+": expansion requested")
			}
		default: // requested size; the volume may still be growing
			switch {
			case !cl.Bound || cl.Capacity.Cmp(*want) >= 0:
				// An unbound claim is provisioned at its request.
				atSize++
			case len(cl.Resizing) > 0:
				progress = append(progress, cl.Name+": "+strings.Join(cl.Resizing, ", "))
			default:
				progress = append(progress, fmt.Sprintf("%s: at %s, waiting for the volume to grow", cl.Name, cl.Capacity.String()))
			}
		}
	}

	var parts []string
	r := &d.Report
	if len(whyOrder) > 0 {
		r.Reason = etcdv1beta2.ReasonExpansionNotAllowed
		var keys []string
		for _, why := range whyOrder {
			parts = append(parts, fmt.Sprintf("%s cannot grow to %s: %s", strings.Join(notAllowed[why], ", "), want.String(), why))
			keys = append(keys, why+"="+strings.Join(notAllowed[why], ","))
		}
		parts[len(parts)-1] += "; the new size applies to new members only"
		r.EventKey = strings.Join(keys, ";")
	}
	if len(smaller) > 0 {
		if r.Reason == "" {
			r.Reason = etcdv1beta2.ReasonAppliesToNewMembersOnly
		}
		parts = append(parts, fmt.Sprintf("a claim cannot shrink, the smaller storage request %s applies to new members only (%s)",
			want.String(), strings.Join(smaller, ", ")))
		r.EventKey = strings.TrimPrefix(r.EventKey+";smaller="+want.String(), ";")
	}
	if len(progress) > 0 || len(unbound) > 0 {
		if r.Reason == "" {
			r.Reason = etcdv1beta2.ReasonClaimsExpanding
		}
		msg := fmt.Sprintf("expanding member claims: %d of %d claims at %s", atSize, len(sorted), want.String())
		if len(progress) > 0 {
			msg += "; " + strings.Join(progress, "; ")
		}
		if len(unbound) > 0 {
			msg += "; not bound yet, expanded once bound: " + strings.Join(unbound, ", ")
		}
		parts = append(parts, msg)
	}
	if len(parts) > 0 {
		r.Settled = false
		r.Message = strings.Join(parts, "; ")
	}
	return d
}

// wantedStorage is the storage request of the spec's claim template, nil without one.
func wantedStorage(c *etcdv1beta2.EtcdCluster) *resource.Quantity {
	if c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return nil
	}
	q, ok := c.Spec.Pod.PersistentVolumeClaimSpec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	return &q
}

// readClaim is the storage step's view of one claim.
func readClaim(pvc *corev1.PersistentVolumeClaim) claimState {
	s := claimState{
		Name:                pvc.Name,
		Bound:               pvc.Status.Phase == corev1.ClaimBound,
		Request:             pvc.Spec.Resources.Requests[corev1.ResourceStorage],
		Capacity:            pvc.Status.Capacity[corev1.ResourceStorage],
		RequestedAtCreation: pvc.Annotations[AnnotationRequestedStorageAtCreation],
	}
	if pvc.Spec.StorageClassName != nil {
		s.Class = *pvc.Spec.StorageClassName
	}
	for _, cond := range pvc.Status.Conditions {
		if cond.Status == corev1.ConditionTrue {
			s.Resizing = append(s.Resizing, string(cond.Type))
		}
	}
	return s
}
