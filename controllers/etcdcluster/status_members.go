package etcdcluster

import (
	"context"
	"regexp"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// status.members.leader and status.members.details: each member as etcd answered in the
// last observation, in every reconcile, paused or not (observing changes nothing).

// The answers come from etcd, whose image the tenant chooses, and reach status: they are
// bounded before they do (and the schema bounds them too, api/*/members_types.go).
const (
	// maxMemberDetails bounds status.members.details whatever the size (the schema's
	// MaxItems): above spec.size's maximum of 99 with room for a scale-down.
	maxMemberDetails = 128
	// memberDetailsMargin is how many more members than spec.size are listed: a
	// scale-down in progress, a member being added or replaced.
	memberDetailsMargin = 8
	// unknownVersion stands for a version answer that is not a semantic version.
	unknownVersion = "unknown"
)

// memberDetailsLimit is how many members status.members.details lists for a cluster of
// the given size.
func memberDetailsLimit(size int) int {
	return min(max(size, 0)+memberDetailsMargin, maxMemberDetails)
}

// semver is what a version answer must look like to be reported (at most 63 bytes, within
// the schema's 64).
var semver = regexp.MustCompile(`^v?[0-9]{1,6}\.[0-9]{1,6}\.[0-9]{1,6}(-[0-9A-Za-z.-]{1,24})?(\+[0-9A-Za-z.-]{1,16})?$`)

// reportedVersion is a member's version answer as status shows it: itself when it is a
// semantic version, else "unknown"; empty stays empty.
func reportedVersion(v string) string {
	if v == "" || semver.MatchString(v) {
		return v
	}
	return unknownVersion
}

// reportedName is a member's name as status shows it: itself when it is a DNS label (as
// the pod names the operator gives members are), else its ID; empty stays empty (a
// member not yet started).
func reportedName(name string, id uint64) string {
	if name == "" || len(validation.IsDNS1123Label(name)) == 0 {
		return name
	}
	return etcdadmin.FormatID(id)
}

// reportMembers sets the leader and the per-member list from one observation's answers:
// members is etcd's member list (nil when none answered), statuses each endpoint's
// status answer; at most limit members are listed (memberDetailsLimit), the first by
// name. Without a member list the members last reported stay listed, none of them
// healthy and no leader known: what the operator cannot see is not dropped.
func reportMembers(st *etcdv1beta2.MembersStatus, members []etcdadmin.Member, statuses []etcdadmin.EndpointStatus, limit int) {
	prev := map[string]etcdv1beta2.MemberDetail{}
	for _, d := range st.Details {
		prev[d.Name] = d
	}
	if members == nil {
		st.Leader = ""
		// As last reported, bounded again: a record an older operator wrote is not.
		st.Details = st.Details[:min(len(st.Details), max(limit, 0))]
		for i := range st.Details {
			st.Details[i].Healthy = false
			st.Details[i].Version = reportedVersion(st.Details[i].Version)
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
		name := reportedName(memberName(m), m.ID)
		d := etcdv1beta2.MemberDetail{Name: name, ID: etcdadmin.FormatID(m.ID), Role: etcdv1beta2.MemberRoleFollower}
		if old, ok := prev[name]; ok && old.ID == d.ID {
			d.Version, d.DBSize, d.DBSizeInUse = reportedVersion(old.Version), old.DBSize, old.DBSizeInUse
		}
		switch {
		case m.IsLearner:
			d.Role = etcdv1beta2.MemberRoleLearner
		case leader != 0 && m.ID == leader:
			d.Role = etcdv1beta2.MemberRoleLeader
			st.Leader = name
		}
		if s, ok := statusOf[m.ID]; ok {
			d.Version = reportedVersion(s.Version)
			d.DBSize, d.DBSizeInUse = reportedSize(d.DBSize, s.DBSize), reportedSize(d.DBSizeInUse, s.DBSizeInUse)
			d.Healthy = s.Leader != 0
		}
		details = append(details, d)
	}
	sort.Slice(details, func(i, j int) bool { return details[i].Name < details[j].Name })
	st.Details = details[:min(len(details), max(limit, 0))]
}

// Sizes move by etcd's 4 KiB pages even when no client writes (an idle member's in-use
// size went 16Ki → 20Ki → 16Ki in BenchmarkScale's idle minute at 10 × size 3, a status
// write each time), and by every write when clients write: a reported size is kept while
// the new one is within sizeSlackFraction of it or sizeSlackMin, so status follows
// growth, not noise. A database growing steadily is reported about 11 times per
// doubling instead of at every reconcile.
const (
	sizeSlackFraction = 16 // a sixteenth: 6.25%
	sizeSlackMin      = 64 << 10
)

// reportedSize is what status shows for a database size b, given what it showed before
// (nil: nothing, or another member of the same name): the old value while b is within
// the slack of it, else b rounded (roundedSize).
func reportedSize(old *resource.Quantity, b int64) *resource.Quantity {
	if old != nil {
		o := old.Value()
		if diff := b - o; max(diff, -diff) < max(o/sizeSlackFraction, sizeSlackMin) {
			return old
		}
	}
	return roundedSize(b)
}

// roundedSize is a database size rounded down to a whole MiB, or KiB below 1 MiB, so
// that a newly reported size does not claim byte precision.
func roundedSize(b int64) *resource.Quantity {
	const ki, mi = 1 << 10, 1 << 20
	unit := int64(mi)
	if b < mi {
		unit = ki
	}
	return resource.NewQuantity(b/unit*unit, resource.BinarySI)
}

// observePaused refreshes status.members of a paused cluster: the member pods are
// listed and etcd asked, as in every observation, and nothing else is done. A cluster
// with built-in issuing is dialled over the scheme and with the client certificate of
// the generation it runs, read without issuing anything (act_builtintls.go).
func (r *Reconciler) observePaused(ctx context.Context, c *etcdv1beta2.EtcdCluster, w *statusWriter) {
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		log.FromContext(ctx).V(1).Info("paused: member pods not listed", "err", err.Error())
		return
	}
	r.observeBuiltinTLS(ctx, c, w, pods)
	r.observeCertManagerTLS(ctx, c, w) // act_tls_certmanager.go
	own := ownPods(c, pods)
	endpoints, epOfPod := r.dialTargets(c, own, r.recoveryUnderway(c, pods))
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
		ans = askMembers(ctx, admin, endpoints, probeBounds(admin, c.Status.Bootstrapped, own, epOfPod))
	}
	reportMembers(&c.Status.Members, ans.members, ans.statuses, memberDetailsLimit(c.Spec.Size))
}
