package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// What the Nodes say about moving members off cordoned nodes (the planner's
// Drift.LeaveNode and Observed.NoNodeToLeaveTo, internal/planner/cordon.go).

// nodeFacts is what one Node says about the member pods on it.
type nodeFacts struct {
	ready    bool // NodeReady is True (or the Node could not be read)
	cordoned bool // spec.unschedulable: a drain, or taken out of service
}

// nodeCache holds each Node read during one observation.
type nodeCache map[string]nodeFacts

// node reads the facts of Node name, once per cache. A Node that cannot be read is
// taken for ready and not cordoned: that is no evidence of a dead member, nor a reason
// to move one.
func (r *Reconciler) node(ctx context.Context, name string, cache nodeCache) nodeFacts {
	if f, ok := cache[name]; ok {
		return f
	}
	f := nodeFacts{ready: true}
	var n corev1.Node
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &n); err == nil {
		f.ready = nodeIsReady(&n)
		f.cordoned = n.Spec.Unschedulable
	}
	cache[name] = f
	return f
}

// nodeIsReady reports the Node's NodeReady condition.
func nodeIsReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return true
}

// leavingPod is the first member pod (by name) on a cordoned node, nil when none is.
func leavingPod(o *observation) *corev1.Pod {
	for _, pp := range o.planner.Pods {
		if pp.Drift.LeaveNode != "" {
			return o.pods[pp.Name]
		}
	}
	return nil
}

// noNodeToLeaveTo reports that no Node could take the pod of a member that leaves a
// cordoned node: none is Ready, schedulable, matched by the leaving pod's node
// selector, free of taints it does not tolerate and, where its required anti-affinity
// (per host) names member pods, free of those. Required node affinity and topology
// spread are not judged: a learner whose pod cannot be placed after all is abandoned
// by the planner's learner timeout, losing nothing.
//
// Once the successor has joined (more members than spec.size: its learner, or a voter
// beyond size until the leaving member is removed), the question is settled: its pod
// found a node, which its own anti-affinity now repels. Asking again would call the
// move impossible half-way through, abandon the learner and lower the disruption budget
// (render.BudgetMinAvailable) while the move could still complete.
func (r *Reconciler) noNodeToLeaveTo(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation) (bool, error) {
	leaving := leavingPod(o)
	if leaving == nil || len(o.planner.Members) > c.Spec.Size {
		return false, nil
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return false, fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		if canTake(&nodes.Items[i], leaving, o.pods) {
			return false, nil
		}
	}
	return true, nil
}

// canTake reports that node n could run a new pod shaped like p (see noNodeToLeaveTo).
func canTake(n *corev1.Node, p *corev1.Pod, members map[string]*corev1.Pod) bool {
	if n.Spec.Unschedulable || !nodeIsReady(n) || n.Name == p.Spec.NodeName {
		return false
	}
	if !labels.SelectorFromSet(p.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false
	}
	for i := range n.Spec.Taints {
		if t := &n.Spec.Taints[i]; t.Effect != corev1.TaintEffectPreferNoSchedule && !tolerated(p.Spec.Tolerations, t) {
			return false
		}
	}
	return !hostsRepelledMember(n.Name, p, members)
}

// tolerated reports that one of tols tolerates taint t (key, Exists or Equal value,
// effect; the numeric operators of newer APIs count as not tolerating).
func tolerated(tols []corev1.Toleration, t *corev1.Taint) bool {
	for _, tol := range tols {
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		if tol.Key != "" && tol.Key != t.Key {
			continue
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			return true
		case "", corev1.TolerationOpEqual:
			if tol.Key != "" && tol.Value == t.Value {
				return true
			}
		}
	}
	return false
}

// hostsRepelledMember reports that a member pod on node matches a required per-host
// anti-affinity term of p (the CoreOS antiAffinity field renders one).
func hostsRepelledMember(node string, p *corev1.Pod, members map[string]*corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != corev1.LabelHostname {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			continue
		}
		for _, m := range members {
			if m.Spec.NodeName == node && m.DeletionTimestamp == nil && sel.Matches(labels.Set(m.Labels)) {
				return true
			}
		}
	}
	return false
}
