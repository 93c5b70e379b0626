package kubelet

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// statusLoop posts the pod status whenever it changes (coalescing bursts), skipping
// while the node is down: a dead machine reports nothing.
func (w *podWorker) statusLoop() {
	var last []byte
	pending := false // a change was held back while the node was down
	for {
		var nodeUp <-chan struct{}
		if pending {
			nodeUp = w.node.upChan()
		}
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		case <-nodeUp:
		}
		if w.node.isDown() {
			pending = true
			continue
		}
		pending = false
		body, err := w.statusPatch()
		if err != nil {
			w.log.Error(err, "status patch")
			continue
		}
		if bytes.Equal(body, last) {
			continue
		}
		if err := w.patch(w.ctx, body); err != nil {
			if w.ctx.Err() == nil {
				w.log.Info("status update failed, will retry", "err", err.Error())
				time.AfterFunc(time.Second, w.changed)
			}
			continue
		}
		last = body
	}
}

// pushStatus posts the current status synchronously.
func (w *podWorker) pushStatus(ctx context.Context) error {
	body, err := w.statusPatch()
	if err != nil {
		return err
	}
	return w.patch(ctx, body)
}

func (w *podWorker) patch(ctx context.Context, body []byte) error {
	_, err := w.k.cs.CoreV1().Pods(w.ns).Patch(ctx, w.name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}

// statusPatch is a strategic merge patch of the status fields the kubelet owns. The
// conditions list merges by type, so conditions of other writers (the scheduler's
// PodScheduled, readiness gates, DisruptionTarget) are kept. The UID in the patch makes it
// fail against a newer pod of the same name.
func (w *podWorker) statusPatch() ([]byte, error) {
	st := w.computeStatus()
	patch := map[string]any{
		"metadata": map[string]any{"uid": w.uid},
		"status":   st,
	}
	return json.Marshal(patch)
}

// computeStatus derives the PodStatus from the worker's state.
func (w *podWorker) computeStatus() map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	pod := w.pod
	now := metav1.Now()

	phase := v1.PodPending
	anyStarted, allReady := false, len(w.mains) > 0
	for _, c := range w.mains {
		if c.runs > 0 {
			anyStarted = true
		}
		if !c.ready {
			allReady = false
		}
	}
	switch {
	case w.finalPhase != "":
		phase = w.finalPhase
	case w.failed:
		phase = v1.PodFailed
	case w.initDone && anyStarted:
		phase = v1.PodRunning
	}
	terminal := phase == v1.PodSucceeded || phase == v1.PodFailed
	if terminal {
		allReady = false
	}
	gatesOK := true
	for _, g := range pod.Spec.ReadinessGates {
		ok := false
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == v1.ConditionTrue {
				ok = true
			}
		}
		gatesOK = gatesOK && ok
	}
	cond := func(t v1.PodConditionType, ok bool, reason string) v1.PodCondition {
		s := v1.ConditionFalse
		if ok {
			s, reason = v1.ConditionTrue, ""
		}
		c := v1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now}
		for _, old := range pod.Status.Conditions {
			if old.Type == t && old.Status == s {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	notReadyReason := "ContainersNotReady"
	if terminal {
		notReadyReason = "PodCompleted"
	}
	conds := []v1.PodCondition{
		cond(v1.PodReadyToStartContainers, w.sandboxOK && !terminal, ""),
		cond(v1.PodInitialized, w.initDone || (terminal && !w.failed), "ContainersNotInitialized"),
		cond(v1.ContainersReady, allReady, notReadyReason),
		cond(v1.PodReady, allReady && gatesOK, notReadyReason),
	}
	scheduled := false
	for _, c := range pod.Status.Conditions {
		scheduled = scheduled || c.Type == v1.PodScheduled
	}
	if !scheduled {
		// Pods bound without the scheduler (spec.nodeName set by the creator) get the
		// condition from the kubelet, as with a real one.
		conds = append(conds, cond(v1.PodScheduled, true, ""))
	}

	st := map[string]any{
		"phase":                 phase,
		"conditions":            conds,
		"hostIP":                w.node.spec.IP,
		"hostIPs":               []v1.HostIP{{IP: w.node.spec.IP}},
		"startTime":             w.startTime,
		"containerStatuses":     w.containerStatuses(w.mains),
		"initContainerStatuses": w.containerStatuses(w.inits),
	}
	if w.podIP != "" && w.sandboxOK {
		st["podIP"] = w.podIP
		st["podIPs"] = []v1.PodIP{{IP: w.podIP}}
	}
	return st
}

func (w *podWorker) containerStatuses(cs []*containerRuntime) []v1.ContainerStatus {
	out := make([]v1.ContainerStatus, 0, len(cs))
	for _, c := range cs {
		s := v1.ContainerStatus{
			Name:                 c.spec.Name,
			State:                c.state,
			LastTerminationState: c.last,
			Ready:                c.ready,
			RestartCount:         c.restarts,
			Image:                c.spec.Image,
			ImageID:              "bench://" + c.spec.Image,
			Started:              ptr.To(c.started),
		}
		if c.runs > 0 {
			s.ContainerID = containerID(w, c)
		}
		out = append(out, s)
	}
	return out
}
