package etcdcluster

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// status.members.leader and status.members.details: each member as etcd answered in the
// last observation, in every reconcile, paused or not (observing changes nothing).

// reportMembers sets the leader and the per-member list from one observation's answers:
// members is etcd's member list (nil when none answered), statuses each endpoint's
// status answer. Without a member list the members last reported stay listed, none of
// them healthy and no leader known: what the operator cannot see is not dropped.
func reportMembers(st *etcdv1beta2.MembersStatus, members []etcdadmin.Member, statuses []etcdadmin.EndpointStatus) {
	prev := map[string]etcdv1beta2.MemberDetail{}
	for _, d := range st.Details {
		prev[d.Name] = d
	}
	if members == nil {
		st.Leader = ""
		for i := range st.Details {
			st.Details[i].Healthy = false
		}
		return
	}
	statusOf := map[uint64]etcdadmin.EndpointStatus{}
	leader := uint64(0)
	for _, s := range statuses {
		if s.Err != nil {
			continue
		}
		statusOf[s.MemberID] = s
		if s.IsLeader() || leader == 0 {
			leader = s.Leader
		}
	}
	st.Leader = ""
	details := make([]etcdv1beta2.MemberDetail, 0, len(members))
	for _, m := range members {
		name := memberName(m)
		d := etcdv1beta2.MemberDetail{Name: name, ID: etcdadmin.FormatID(m.ID), Role: etcdv1beta2.MemberRoleFollower}
		if old, ok := prev[name]; ok && old.ID == d.ID {
			d.Version, d.DBSize, d.DBSizeInUse = old.Version, old.DBSize, old.DBSizeInUse
		}
		switch {
		case m.IsLearner:
			d.Role = etcdv1beta2.MemberRoleLearner
		case leader != 0 && m.ID == leader:
			d.Role = etcdv1beta2.MemberRoleLeader
			st.Leader = name
		}
		if s, ok := statusOf[m.ID]; ok {
			d.Version = s.Version
			d.DBSize, d.DBSizeInUse = roundedSize(s.DBSize), roundedSize(s.DBSizeInUse)
			d.Healthy = s.Leader != 0
		}
		details = append(details, d)
	}
	sort.Slice(details, func(i, j int) bool { return details[i].Name < details[j].Name })
	st.Details = details
}

// roundedSize is a database size rounded down to a whole MiB, or KiB below 1 MiB: every
// write changes the exact sizes, and a status that changed with each would be written,
// and the cluster reconciled again, after every reconcile of a cluster taking writes.
func roundedSize(b int64) *resource.Quantity {
	const ki, mi = 1 << 10, 1 << 20
	unit := int64(mi)
	if b < mi {
		unit = ki
	}
	return resource.NewQuantity(b/unit*unit, resource.BinarySI)
}

// observePaused refreshes status.members of a paused cluster: the member pods are
// listed and etcd asked, as in every observation, and nothing else is done.
func (r *Reconciler) observePaused(ctx context.Context, c *etcdv1beta2.EtcdCluster) {
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		log.FromContext(ctx).V(1).Info("paused: member pods not listed", "err", err.Error())
		return
	}
	own := ownPods(c, pods)
	endpoints, _ := r.dialTargets(c, own, r.recoveryUnderway(c, pods))
	var ans etcdAnswers
	if len(endpoints) > 0 {
		// With auth on, the root credentials (read only: a cluster whose auth is on never
		// has its Secret created, so observing creates nothing); off, none are needed.
		var auth authObservation
		if conditionTrue(c, etcdv1beta2.ClusterConditionAuthEnabled) {
			auth = r.observeAuth(ctx, c)
		}
		admin, err := r.connect(ctx, c, endpoints, &auth)
		if err != nil {
			log.FromContext(ctx).V(1).Info("paused: no etcd client", "err", err.Error())
			return
		}
		ans = askMembers(ctx, admin, endpoints)
	}
	reportMembers(&c.Status.Members, ans.members, ans.statuses)
}
