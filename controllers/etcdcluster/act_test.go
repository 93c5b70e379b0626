package etcdcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// sawEvent drains the fixture's events up to one of type typ and reason, and fails the
// test if there is none.
func (f *proofFixture) sawEvent(t *testing.T, typ, reason string) string {
	t.Helper()
	for {
		select {
		case e := <-f.rec.Events:
			if strings.HasPrefix(e, typ+" "+reason+" ") {
				return e
			}
		default:
			t.Fatalf("no %s event %s", typ, reason)
			return ""
		}
	}
}

// noEvents fails the test if the fixture recorded any event not yet drained.
func (f *proofFixture) noEvents(t *testing.T) {
	t.Helper()
	select {
	case e := <-f.rec.Events:
		t.Errorf("unexpected event %q", e)
	default:
	}
}

// etcdFlag is the value of --name=value on the etcd container's command line.
func etcdFlag(p *corev1.Pod, name string) string {
	for _, ct := range p.Spec.Containers {
		for _, arg := range append(append([]string(nil), ct.Command...), ct.Args...) {
			if v, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
				return v
			}
		}
	}
	return ""
}

// Steps that only wait or report requeue without touching anything; an unknown kind is
// an error, never a silent success.
func TestActWithoutChanges(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		a       planner.Action
		requeue time.Duration
		warning string // reason of the warning event; "" for none
	}{
		{planner.Action{Kind: planner.Wait, RequeueAfter: 7 * time.Second}, 7 * time.Second, ""},
		{planner.Action{Kind: planner.Wait}, activeResync, ""},
		{planner.Action{Kind: planner.Wait, RequeueAfter: 24 * time.Hour}, steadyResync, ""},
		{planner.Action{Kind: planner.Done}, steadyResync, ""},
		{planner.Action{Kind: planner.RefuseUpgrade, Reason: etcdv1beta2.ReasonUpgradeRefused, Message: "skips a minor"}, steadyResync, etcdv1beta2.ReasonUpgradeRefused},
		{planner.Action{Kind: planner.QuorumLost, Reason: etcdv1beta2.ReasonQuorumLost, Message: "2 of 3 down"}, steadyResync, etcdv1beta2.ReasonQuorumLost},
	} {
		f := newProofFixture(t, nil, ownedMemberPod("c-m1", "uid-c"))
		res, err := f.r.act(ctx, f.cluster, f.observed(t, "c-m1"), tc.a)
		if err != nil || res.RequeueAfter != tc.requeue {
			t.Errorf("%v: result %+v, err %v; want requeue after %v", tc.a.Kind, res, err, tc.requeue)
		}
		if tc.warning != "" {
			if e := f.sawEvent(t, corev1.EventTypeWarning, tc.warning); !strings.Contains(e, tc.a.Message) {
				t.Errorf("%v: event %q does not carry the plan's message", tc.a.Kind, e)
			}
		}
		f.noEvents(t)
		if len(f.deletes) != 0 || strings.Join(f.podNames(t), ",") != "c-m1" {
			t.Errorf("%v touched pods: deletes %v, pods %v", tc.a.Kind, f.deletes, f.podNames(t))
		}
	}
	f := newProofFixture(t, nil)
	if _, err := f.r.act(ctx, f.cluster, f.observed(t), planner.Action{Kind: planner.Kind(99)}); err == nil {
		t.Error("an unknown action kind succeeded")
	}
}

// A step that talks to etcd fails, touching nothing, when no endpoint answered.
func TestActNeedsEtcdForMembershipSteps(t *testing.T) {
	for _, k := range []planner.Kind{planner.AddLearner, planner.PromoteLearner, planner.MoveLeader, planner.RemoveMember, planner.ReplaceMember} {
		f := newProofFixture(t, nil, ownedMemberPod("c-m1", "uid-c"), memberClaim("c-m1", "uid-c"))
		_, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-m1"), planner.Action{Kind: k, Name: "c-m1", ID: 1, DeletePod: true})
		if err == nil || !strings.Contains(err.Error(), "no reachable etcd endpoint for "+k.String()) {
			t.Errorf("%v: err %v, want no reachable endpoint", k, err)
		}
		if len(f.deletes) != 0 || len(f.podNames(t)) != 1 {
			t.Errorf("%v without etcd touched pods: deletes %v", k, f.deletes)
		}
	}
}

// ClearPending drops the pending learner whatever the step; the flush writes it.
func TestActClearsPending(t *testing.T) {
	f := newProofFixture(t, nil)
	f.cluster.Status.PendingMember = &etcdv1beta2.PendingMember{Name: "c-m9", ID: "9"}
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t), planner.Action{Kind: planner.Wait, ClearPending: true}); err != nil {
		t.Fatal(err)
	}
	if f.cluster.Status.PendingMember != nil {
		t.Errorf("pending member %+v kept", f.cluster.Status.PendingMember)
	}
}
