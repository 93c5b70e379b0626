package kubelet

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const leaseNamespace = "kube-node-lease"

// nodeState is one emulated machine: up (heartbeating, running pods) or down.
type nodeState struct {
	spec NodeSpec

	mu   sync.Mutex
	down bool
	up   chan struct{} // closed while the node is up
}

func newNodeState(spec NodeSpec) *nodeState {
	up := make(chan struct{})
	close(up)
	return &nodeState{spec: spec, up: up}
}

func (n *nodeState) isDown() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.down
}

// upChan returns a channel that is closed while (or once) the node is up.
func (n *nodeState) upChan() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.up
}

// setDown flips the state; it reports whether anything changed.
func (n *nodeState) setDown(down bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down == down {
		return false
	}
	n.down = down
	if down {
		n.up = make(chan struct{})
	} else {
		close(n.up)
	}
	return true
}

func (k *Kubelet) nodeObject(n *nodeState) *v1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname":  n.spec.Name,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/arch":      runtime.GOARCH,
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for key, v := range n.spec.Labels {
		labels[key] = v
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.spec.Name, Labels: labels},
	}
}

// nodeStatus is the full status the kubelet reports, with heartbeat time now.
func (k *Kubelet) nodeStatus(n *nodeState, old *v1.NodeStatus) v1.NodeStatus {
	now := metav1.Now()
	capacity := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse(n.spec.CPU),
		v1.ResourceMemory:           resource.MustParse(n.spec.Memory),
		v1.ResourcePods:             *resource.NewQuantity(int64(n.spec.MaxPods), resource.DecimalSI),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	cond := func(t v1.NodeConditionType, s v1.ConditionStatus, reason, msg string) v1.NodeCondition {
		c := v1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		if old != nil {
			for _, oc := range old.Conditions {
				if oc.Type == t && oc.Status == s {
					c.LastTransitionTime = oc.LastTransitionTime
				}
			}
		}
		return c
	}
	return v1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       v1.NodeRunning,
		Conditions: []v1.NodeCondition{
			cond(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(v1.NodeReady, v1.ConditionTrue, "KubeletReady", "bench kubelet is posting ready status"),
		},
		Addresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: n.spec.IP},
			{Type: v1.NodeHostName, Address: n.spec.Name},
		},
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
		NodeInfo: v1.NodeSystemInfo{
			MachineID: n.spec.Name, SystemUUID: n.spec.Name, BootID: n.spec.Name,
			KernelVersion: "bench", OSImage: "etcd-operator bench", ContainerRuntimeVersion: "bench://1",
			KubeletVersion: "v1.37.2", KubeProxyVersion: "v1.37.2",
			OperatingSystem: "linux", Architecture: runtime.GOARCH,
		},
	}
}

// registerNode creates the Node (or adopts an existing one) and posts its status, retrying
// until the apiserver answers.
func (k *Kubelet) registerNode(ctx context.Context, n *nodeState) error {
	for {
		err := k.tryRegisterNode(ctx, n)
		if err == nil {
			return nil
		}
		k.log.Info("node registration failed, retrying", "node", n.spec.Name, "err", err.Error())
		if !sleepCtx(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

func (k *Kubelet) tryRegisterNode(ctx context.Context, n *nodeState) error {
	nodes := k.cs.CoreV1().Nodes()
	node, err := nodes.Create(ctx, k.nodeObject(n), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, n.spec.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := k.nodeObject(n)
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for key, v := range want.Labels {
			node.Labels[key] = v
		}
		node, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	node.Status = k.nodeStatus(n, &node.Status)
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return k.renewLease(ctx, n, node.UID)
}

// heartbeat renews the node's Lease and refreshes its Ready condition every interval
// while the node is up, so the node lifecycle controller keeps it Ready.
func (k *Kubelet) heartbeat(ctx context.Context, n *nodeState) {
	t := time.NewTicker(k.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n.isDown() {
			continue
		}
		if err := k.updateNodeStatus(ctx, n); err != nil && ctx.Err() == nil {
			k.log.Info("node status update failed", "node", n.spec.Name, "err", err.Error())
		}
	}
}

func (k *Kubelet) updateNodeStatus(ctx context.Context, n *nodeState) error {
	nodes := k.cs.CoreV1().Nodes()
	node, err := nodes.Get(ctx, n.spec.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Someone deleted the Node: register it again, as a kubelet does.
		return k.tryRegisterNode(ctx, n)
	}
	if err != nil {
		return err
	}
	if err := k.renewLease(ctx, n, node.UID); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	node.Status = k.nodeStatus(n, &node.Status)
	_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

func (k *Kubelet) renewLease(ctx context.Context, n *nodeState, nodeUID types.UID) error {
	leases := k.cs.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	dur := int32(40)
	lease, err := leases.Get(ctx, n.spec.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: n.spec.Name, Namespace: leaseNamespace},
			Spec: coordv1.LeaseSpec{
				HolderIdentity: ptr.To(n.spec.Name), LeaseDurationSeconds: &dur, RenewTime: &now,
			},
		}
		if nodeUID != "" {
			// Owned by the Node, as a kubelet's lease is, so deleting the Node removes it.
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.spec.Name, UID: nodeUID}}
		}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	lease.Spec.HolderIdentity = ptr.To(n.spec.Name)
	lease.Spec.LeaseDurationSeconds = &dur
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
