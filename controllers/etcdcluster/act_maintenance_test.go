//go:build integration

package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// The NOSPACE remediation's steps against a real etcd, in the order the planner gives
// them: compact, defragment each member, disarm. Each is recorded in status.maintenance
// and an event; the run is written before the first step acts, and the end is recorded.
func TestActNoSpaceRemediationOnRealEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ec := etcdtest.StartCluster(t, 3, etcdtest.DefaultVersion)
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: ec.Endpoints(), Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	val := strings.Repeat("v", 16<<10)
	var rev int64
	for range 200 {
		resp, err := admin.Client().Put(ctx, "k", val)
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	// The members' IDs and endpoints, from every member's answer: a status probe is
	// bounded by 2 s, which a member on a loaded machine can miss once (an ID of 0).
	var sts []etcdadmin.EndpointStatus
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "every member answers its status", func() error {
		sts = admin.Status(ctx)
		for _, st := range sts {
			if st.Err != nil {
				return st.Err
			}
		}
		return nil
	})
	raw := pb.NewMaintenanceClient(admin.Client().ActiveConnection())
	if _, err := raw.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: sts[0].MemberID, Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatal(err)
	}

	r, c, kc, rec := statusWriterFixture(t, interceptor.Funcs{})
	o := &observation{admin: admin, status: r.statusWriterFor(c)}
	// The alarm list as the reconcile that disarms read it, and the condition as the
	// remediation left it.
	alarms, err := admin.Alarms(ctx)
	if err != nil || len(alarms) != 1 {
		t.Fatalf("alarms before the remediation: %v, %v; want the NOSPACE raised", alarms, err)
	}
	o.space = spaceObservation{alarmsKnown: true, alarms: alarms}
	o.noSpaceReason, o.noSpaceMessage = etcdv1beta2.ReasonNoSpaceRemediating, "defragmenting"
	updateCondition(c, etcdv1beta2.ClusterConditionSpaceAvailable, false, o.noSpaceReason, o.noSpaceMessage, "")
	steps := []planner.Action{{Kind: planner.Compact, Revision: rev, Trigger: planner.TriggerNoSpace}}
	for _, st := range sts[1:] {
		steps = append(steps, planner.Action{Kind: planner.Defragment, ID: st.MemberID, Name: st.Endpoint, Trigger: planner.TriggerNoSpace})
	}
	steps = append(steps, planner.Action{Kind: planner.Defragment, ID: sts[0].MemberID, Name: sts[0].Endpoint, Trigger: planner.TriggerNoSpace},
		planner.Action{Kind: planner.DisarmAlarm, Alarm: planner.AlarmNoSpace, Trigger: planner.TriggerNoSpace})
	for i, a := range steps {
		if err := r.actMaintenance(ctx, c, o, a); err != nil {
			t.Fatalf("step %d %v: %v", i, a, err)
		}
		if i == 0 {
			// Written before compacting: a restarted operator knows a NOSPACE run started.
			if got := stored(t, kc).Status.Maintenance; got == nil || got.Run == nil || got.Run.Trigger != planner.TriggerNoSpace {
				t.Fatalf("after the first step, stored maintenance %+v: want the run recorded", got)
			}
			if run := c.Status.Maintenance.Run; run.CompactedRevision != rev {
				t.Fatalf("run after compaction: %+v, want revision %d", run, rev)
			}
			// The compaction returns once the member that served it has dropped the old
			// revisions; the others apply it from the log, on a loaded machine maybe after
			// their defragmentation below has started, which would then (rightly) free
			// little. Each must have applied it (a read below rev is refused) first.
			for _, st := range sts {
				poll.Eventually(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("%s has applied the compaction", st.Endpoint), func() error {
					if _, _, err := admin.KeyCount(ctx, st.Endpoint, rev-1); !errors.Is(err, rpctypes.ErrCompacted) {
						return fmt.Errorf("read at revision %d: %v", rev-1, err)
					}
					return nil
				})
			}
		}
	}
	ms := c.Status.Maintenance
	if ms.Run != nil || ms.LastTrigger != planner.TriggerNoSpace || ms.LastDefragmentationTime == nil || ms.LastFreedBytes < 3*16<<10*100 {
		t.Fatalf("maintenance after the run: %+v (run %+v); want it finished, with what it freed", ms, ms.Run)
	}
	if alarms, err := admin.Alarms(ctx); err != nil || len(alarms) != 0 {
		t.Fatalf("alarms after disarm: %v, %v", alarms, err)
	}
	var reasons []string
	for len(rec.Events) > 0 {
		e := <-rec.Events
		reasons = append(reasons, strings.Fields(e)[1])
	}
	want := []string{eventCompacted, eventDefragmented, eventDefragmented, eventDefragmented, eventDisarmed, etcdv1beta2.ReasonDefragmentationFinished}
	if strings.Join(reasons, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", reasons, want)
	}
	// The disarming reconcile's own status says the alarm is gone: nothing may trigger
	// another reconcile before the steady resync.
	r.reportSpace(c, o, "")
	if cond := findCondition(c, etcdv1beta2.ClusterConditionSpaceAvailable); cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != etcdv1beta2.ReasonNoAlarm {
		t.Fatalf("SpaceAvailable after the disarm: %+v, want True (%s)", cond, etcdv1beta2.ReasonNoAlarm)
	}
}

// A scheduled run is recorded, with its slot, before the first member is touched: when
// that step fails, the record is there for the next attempt.
func TestDefragmentRecordsTheRunFirst(t *testing.T) {
	ec := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: ec.Endpoints(), Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	r, c, kc, _ := statusWriterFixture(t, interceptor.Funcs{})
	slot := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	o := &observation{admin: admin, status: r.statusWriterFor(c), scheduleSlot: slot}
	err = r.actMaintenance(context.Background(), c, o, planner.Action{Kind: planner.Defragment, ID: 0xdead, Trigger: planner.TriggerSchedule})
	if err == nil {
		t.Fatal("defragmenting a member that does not exist succeeded")
	}
	got := stored(t, kc).Status.Maintenance
	if got == nil || got.Run == nil || got.Run.Trigger != planner.TriggerSchedule || got.LastScheduleTime == nil || !got.LastScheduleTime.Time.Equal(slot) {
		t.Fatalf("stored maintenance %+v: want the scheduled run and its slot recorded", got)
	}
}
