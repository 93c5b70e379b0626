package etcdcluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

func readyNode(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func cordon(n *corev1.Node) { n.Spec.Unschedulable = true }

func podOn(name, node string) *corev1.Pod {
	p := ownedMemberPod(name, "uid-c")
	p.Spec.NodeName = node
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// repelMembers gives p the required per-host anti-affinity the CoreOS antiAffinity
// field renders: no two member pods of cluster c on one node.
func repelMembers(p *corev1.Pod) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: render.ClusterLabels("c")},
		}}}}
	return p
}

// observe marks a pod on a cordoned node as leaving it (and only that pod), and says
// whether another node could take its replacement.
func TestObserveCordonedNode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		spare      *corev1.Node // a third node, nil: none
		repel      bool
		wantNoNode bool
	}{
		{name: "a spare node takes the replacement", spare: readyNode("n-spare")},
		{name: "without anti-affinity a node holding a member will do", wantNoNode: false},
		{name: "anti-affinity and every other node holds a member", repel: true, wantNoNode: true},
		{name: "anti-affinity and a spare node", spare: readyNode("n-spare"), repel: true},
		{name: "the spare node is cordoned too", spare: readyNode("n-spare", cordon), repel: true, wantNoNode: true},
		{name: "the spare node is not ready", spare: readyNode("n-spare", func(n *corev1.Node) {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		}), repel: true, wantNoNode: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaving, staying := podOn("c-a", "n-drained"), podOn("c-b", "n-up")
			if tc.repel {
				repelMembers(leaving)
				repelMembers(staying)
			}
			objs := []client.Object{leaving, staying, readyNode("n-drained", cordon), readyNode("n-up")}
			if tc.spare != nil {
				objs = append(objs, tc.spare)
			}
			f := newProofFixture(t, nil, objs...)
			o, err := f.r.observe(context.Background(), f.cluster, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer o.close()
			if len(o.planner.Pods) != 2 {
				t.Fatalf("pods %+v", o.planner.Pods)
			}
			if got := o.planner.Pods[0].Drift.LeaveNode; got != "n-drained" {
				t.Errorf("pod c-a on the cordoned node: LeaveNode %q", got)
			}
			if got := o.planner.Pods[1].Drift.LeaveNode; got != "" {
				t.Errorf("pod c-b on a schedulable node: LeaveNode %q", got)
			}
			if o.planner.NoNodeToLeaveTo != tc.wantNoNode {
				t.Errorf("NoNodeToLeaveTo %v, want %v", o.planner.NoNodeToLeaveTo, tc.wantNoNode)
			}
		})
	}
}

// Without a pod on a cordoned node, Nodes are not listed and nothing leaves.
func TestObserveNoCordonNoMove(t *testing.T) {
	f := newProofFixture(t, nil, podOn("c-a", "n-up"), readyNode("n-up"))
	o, err := f.r.observe(context.Background(), f.cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if o.planner.NoNodeToLeaveTo || o.planner.Pods[0].Drift.LeaveNode != "" {
		t.Errorf("no cordon, yet %+v", o.planner)
	}
}

// canTake: a node's selector labels, taints and members decide.
func TestCanTake(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "etcd", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		pod  func(*corev1.Pod)
		want bool
	}{
		{"plain ready node", readyNode("n-x"), nil, true},
		{"cordoned", readyNode("n-x", cordon), nil, false},
		{"the node the pod leaves", readyNode("n-drained"), nil, false},
		{"node selector not matched", readyNode("n-x"), func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }, false},
		{"node selector matched", readyNode("n-x", func(n *corev1.Node) { n.Labels["disk"] = "ssd" }),
			func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }, true},
		{"untolerated taint", readyNode("n-x", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} }), nil, false},
		{"PreferNoSchedule taint is no bar", readyNode("n-x", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}
		}), nil, true},
		{"tolerated taint (Equal)", readyNode("n-x", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} }),
			func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd"}}
			}, true},
		{"toleration with another value", readyNode("n-x", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} }),
			func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "other"}}
			}, false},
		{"tolerate everything (Exists, no key)", readyNode("n-x", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} }),
			func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }, true},
		{"anti-affinity, node holds a member", readyNode("n-up"), func(p *corev1.Pod) { repelMembers(p) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := podOn("c-a", "n-drained")
			if tc.pod != nil {
				tc.pod(p)
			}
			members := map[string]*corev1.Pod{"c-a": p, "c-b": podOn("c-b", "n-up")}
			if got := canTake(tc.node, p, members); got != tc.want {
				t.Errorf("canTake = %v, want %v", got, tc.want)
			}
		})
	}
}

// Once the successor has joined (more members than spec.size), the node it took is not
// held against the move: the move is not declared impossible half-way through.
func TestNoNodeToLeaveToSettledOnceSuccessorJoined(t *testing.T) {
	leaving := repelMembers(podOn("c-a", "n-drained"))
	staying := repelMembers(podOn("c-b", "n-up"))
	successor := repelMembers(podOn("c-s", "n-spare")) // the learner took the only spare node
	f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 2 },
		leaving, staying, successor, readyNode("n-drained", cordon), readyNode("n-up"), readyNode("n-spare"))
	for _, tc := range []struct {
		members    int
		wantNoNode bool
	}{
		{members: 2, wantNoNode: true}, // no successor yet: every other node holds a member
		{members: 3, wantNoNode: false},
	} {
		o := &observation{pods: map[string]*corev1.Pod{"c-a": leaving, "c-b": staying, "c-s": successor}}
		o.planner.Pods = []planner.Pod{{Name: "c-a", Drift: planner.Drift{LeaveNode: "n-drained"}}, {Name: "c-b"}, {Name: "c-s"}}
		o.planner.Members = make([]planner.Member, tc.members)
		got, err := f.r.noNodeToLeaveTo(context.Background(), f.cluster, o)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.wantNoNode {
			t.Errorf("%d members for size 2: NoNodeToLeaveTo %v, want %v", tc.members, got, tc.wantNoNode)
		}
	}
}
