package etcdcluster

import (
	"fmt"
	"slices"
	"strings"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// The conditions read off etcd's alarms. The planner remediates them (act_maintenance.go):
// NOSPACE by compaction, defragmentation and a disarm once the space is back; CORRUPT by
// replacing the member. Each message says what happens and what the user can do.

// alarmCondition is how one alarm type is reported.
type alarmCondition struct {
	alarm    string // etcdadmin.AlarmNoSpace, etcdadmin.AlarmCorrupt
	cond     etcdv1beta2.ClusterConditionType
	reason   string
	okMsg    string
	raisedOn func(members string) string // the message while raised
}

var alarmConditions = []alarmCondition{
	{
		alarm: etcdadmin.AlarmNoSpace, cond: etcdv1beta2.ClusterConditionSpaceAvailable, reason: etcdv1beta2.ReasonNoSpaceAlarm,
		okMsg: "etcd reports no NOSPACE alarm",
		raisedOn: func(members string) string {
			return "etcd raised NOSPACE on " + members + ": a database reached its quota and the cluster takes no writes, only reads and deletes. " +
				"The operator compacts the history, defragments each member not yet 10% below its quota and disarms the alarm once every database is at least 10% below its quota; " +
				"if the data itself is too big, delete keys or raise the quota. " +
				"A larger quota (v1 spec.etcd.quotaBackendBytes, v1beta2 annotation " + etcdv1beta2.QuotaBackendBytesAnnotation + ") applies to new members only"
		},
	},
	{
		alarm: etcdadmin.AlarmCorrupt, cond: etcdv1beta2.ClusterConditionDataConsistent, reason: etcdv1beta2.ReasonCorruptAlarm,
		okMsg: "etcd reports no CORRUPT alarm",
		raisedOn: func(members string) string {
			return "etcd raised CORRUPT on " + members + ": its data differs from its peers' and the cluster takes no writes. " +
				"The operator replaces it from its healthy peers (remove, then a new member that syncs from the leader) while they keep a quorum, " +
				"and disarms the alarm once it is gone"
		},
	},
}

// reportSpace reports what etcd said of its database: the alarm conditions and the
// size, quota and alarm metrics.
func (r *Reconciler) reportSpace(c *etcdv1beta2.EtcdCluster, o *observation, now string) {
	r.reportAlarms(c, o, now)
	recordSpace(c, o.space)
	recordDefragmentation(c)
}

// reportAlarms sets SpaceAvailable and DataConsistent from the alarm list
// (alarmConditionOf). Without an alarm list (no quorum) the conditions stay as they were.
func (r *Reconciler) reportAlarms(c *etcdv1beta2.EtcdCluster, o *observation, now string) {
	if !o.space.alarmsKnown {
		return
	}
	for _, ac := range alarmConditions {
		r.setCondition(c, alarmConditionOf(ac, o), now)
	}
}

// alarmConditionOf is one alarm's condition: True without the alarm; False naming the
// members with it, or, while the operator remediates NOSPACE, how far it got (each step
// has its own event). A raised alarm is a failure, announced again when it spreads to
// other members; it is over when it clears.
func alarmConditionOf(ac alarmCondition, o *observation) conditionUpdate {
	on := alarmedMembers(o.space.alarms, ac.alarm, o.members)
	if len(on) == 0 {
		return conditionUpdate{Type: ac.cond, Status: true, Reason: etcdv1beta2.ReasonNoAlarm, Message: ac.okMsg,
			Recovered: true, EventMessage: "the " + ac.alarm + " alarm was cleared"}
	}
	msg := ac.raisedOn(strings.Join(on, ", "))
	u := conditionUpdate{Type: ac.cond, Reason: ac.reason, Message: msg,
		Fail: strings.Join(on, ", "), EventReason: ac.reason, EventMessage: fmt.Sprintf("%s=False: %s", ac.cond, msg)}
	if ac.alarm == etcdadmin.AlarmNoSpace && o.noSpaceReason != "" {
		u.Reason, u.Message = o.noSpaceReason, o.noSpaceMessage
	}
	return u
}

// alarmedMembers names, sorted, the members with an alarm of the given type: "member
// <name> (ID <hex>)", or only the ID of a member the list does not hold.
func alarmedMembers(alarms []etcdadmin.Alarm, typ string, members []etcdadmin.Member) []string {
	var out []string
	for _, a := range alarms {
		if a.Type != typ {
			continue
		}
		id := etcdadmin.FormatID(a.MemberID)
		name := ""
		if m, ok := etcdadmin.FindByID(members, a.MemberID); ok {
			name = memberName(m)
		}
		if name == "" {
			out = append(out, "member ID "+id)
		} else {
			out = append(out, fmt.Sprintf("member %s (ID %s)", name, id))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// findCondition returns a copy of the cluster's condition of type t, or nil.
func findCondition(c *etcdv1beta2.EtcdCluster, t etcdv1beta2.ClusterConditionType) *etcdv1beta2.ClusterCondition {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return &cond
		}
	}
	return nil
}
