package etcdcluster

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// Member pods that CoreOS etcd-operator 0.9.4 created are adopted as they are: their
// members are this cluster's members (etcd says so), and nothing about them is changed
// in place. They are not of our shape, though: restartPolicy Never (an etcd that exits
// is never restarted, its member is lost) and a busybox init container waiting for DNS.
// They are reported as not on the current spec, so that SpecApplied names them and the
// rolling reconfiguration moves them onto pods of our shape, one at a time.

// fieldCoreOSPodShape is the "field" a CoreOS-made pod differs in.
const fieldCoreOSPodShape = "pod shape (created by CoreOS etcd-operator)"

// coreOSCheckDNSContainer is the init container CoreOS put in every member pod.
const coreOSCheckDNSContainer = "check-dns"

// madeByCoreOS reports a member pod that CoreOS etcd-operator created, judged by what
// the pod shows: no spec fingerprint of ours, and restartPolicy Never or CoreOS's
// check-dns init container. Our pods always carry the fingerprint and never either mark.
func madeByCoreOS(p *corev1.Pod) bool {
	if _, ours := p.Annotations[AnnotationSpecFingerprint]; ours {
		return false
	}
	if p.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return true
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == coreOSCheckDNSContainer {
			return true
		}
	}
	return false
}

// announceCoreOSAdoption emits one event when a cluster whose member pods CoreOS made is
// first seen formed: its status never recorded that (CoreOS's status has no such
// field), and the proof is etcd's member list, which o holds; the message names the
// members and the cluster ID etcd answered.
func (r *Reconciler) announceCoreOSAdoption(c *etcdv1beta2.EtcdCluster, o *observation) {
	if c.Status.Bootstrapped || !o.planner.MembersKnown {
		return
	}
	var coreOSPods []string
	for name, p := range o.pods {
		if madeByCoreOS(p) {
			coreOSPods = append(coreOSPods, name)
		}
	}
	if len(coreOSPods) == 0 {
		return
	}
	sort.Strings(coreOSPods)
	members := make([]string, 0, len(o.planner.Members))
	for _, m := range o.planner.Members {
		members = append(members, m.Name)
	}
	sort.Strings(members)
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonAdoptedCoreOSCluster,
		"adopted the running etcd cluster %s (members %s, from etcd's member list); pods %s were created by CoreOS etcd-operator and are kept",
		etcdadmin.FormatID(o.clusterID), strings.Join(members, ", "), strings.Join(coreOSPods, ", "))
}
