package planner

import (
	"fmt"
	"slices"
	"sort"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Condition is one status condition; timestamps are the controller's job. Its type
// and the summary's phase are spelled once, in api/v1beta2.
type Condition struct {
	Type    v1beta2.ClusterConditionType
	Status  bool
	Reason  string
	Message string
}

// Summary is what the controller copies into the cluster status.
type Summary struct {
	Phase  v1beta2.ClusterPhase
	Reason string
	// Conditions always holds Available, Recovering, Scaling, Upgrading in
	// that order.
	Conditions []Condition
	// ReadyMembers are the members clients can use: alive in etcd and with a Ready pod
	// (the client Service routes only to Ready pods). UnreadyMembers are the others
	// (unstarted ones by ID); with no member list, the members recorded before
	// (Observed.KnownMembers), so the record outlives an outage of every member.
	ReadyMembers   []string
	UnreadyMembers []string
	// CurrentVersion is the lowest version running (what the cluster as a
	// whole speaks); TargetVersion the desired one.
	CurrentVersion string
	TargetVersion  string
}

// readyVoters counts the voting members that are alive and have a Ready pod.
func (v *view) readyVoters() int {
	n := 0
	for _, m := range v.voters {
		if p := v.podOf[m.ID]; v.alive(m) && p != nil && p.Ready {
			n++
		}
	}
	return n
}

// Summarize derives the status summary from the same inputs as Plan and the
// action Plan returned for them. It alone decides Available: etcd has a reachable
// leader and quorum, and a quorum of voters have a Ready pod for clients to reach.
func Summarize(d Desired, o Observed, a Action) Summary {
	d = d.withDefaults()
	s := Summary{Phase: v1beta2.ClusterPhaseRunning, TargetVersion: d.Version}
	if tv, err := ParseVersion(d.Version); err == nil {
		s.TargetVersion = tv.String()
	}
	known := o.MembersKnown && len(o.Members) > 0

	var v *view
	if known {
		v = newView(d, o)
		var lowest *Version
		for _, m := range v.members {
			if p := v.podOf[m.ID]; v.alive(m) && m.Name != "" && p != nil && p.Ready {
				s.ReadyMembers = append(s.ReadyMembers, m.Name)
			} else if m.Name != "" {
				s.UnreadyMembers = append(s.UnreadyMembers, m.Name)
			} else {
				s.UnreadyMembers = append(s.UnreadyMembers, fmt.Sprintf("%x", m.ID))
			}
			if rv, err := ParseVersion(v.runningVersion(m)); err == nil && (lowest == nil || rv.Compare(*lowest) < 0) {
				lowest = &rv
			}
		}
		sort.Strings(s.ReadyMembers)
		sort.Strings(s.UnreadyMembers)
		if lowest != nil {
			s.CurrentVersion = lowest.String()
		}
	} else {
		// No member answers: the members recorded last are still the cluster's, none of
		// them ready. Keeping them is what lets the recreate rule put their pods back on their claims
		// once the pods are gone (KnownMembers is read back from this list).
		s.UnreadyMembers = recordedMembers(o.KnownMembers)
	}

	switch {
	case a.Kind == QuorumLost:
		s.Phase = v1beta2.ClusterPhaseFailed
	case !o.Bootstrapped && !known:
		s.Phase = v1beta2.ClusterPhaseCreating
	}
	if d.Paused {
		s.Reason = v1beta2.ReasonPaused
	} else if a.Kind != Done {
		s.Reason = a.Reason
	}

	avail := Condition{Type: v1beta2.ClusterConditionAvailable}
	switch {
	case !known:
		avail.Reason, avail.Message = v1beta2.ReasonMembersUnknown, "no etcd endpoint answered"
	case v.leader == nil || !v.leader.Reachable:
		avail.Reason, avail.Message = v1beta2.ReasonNoLeader, "no reachable leader"
	case v.reachableVoters < Quorum(len(v.voters)):
		avail.Reason, avail.Message = v1beta2.ReasonNoQuorum, fmt.Sprintf("%d of %d voting members reachable", v.reachableVoters, len(v.voters))
	case v.readyVoters() < Quorum(len(v.voters)):
		// etcd has a quorum, but clients reach members only through Ready pods.
		avail.Reason = v1beta2.ReasonMembersNotReady
		avail.Message = fmt.Sprintf("%d of %d voting members have a Ready pod; clients need %d", v.readyVoters(), len(v.voters), Quorum(len(v.voters)))
	default:
		avail.Status = true
		avail.Reason = v1beta2.ReasonQuorumAvailable
		avail.Message = fmt.Sprintf("%d of %d voting members reachable", v.reachableVoters, len(v.voters))
	}

	// The False states carry a reason and message too: a condition without one shows as
	// null to kubectl and to scripts written for CoreOS's operator.
	rec := Condition{Type: v1beta2.ClusterConditionRecovering, Reason: v1beta2.ReasonNothingToRepair, Message: "no member is being repaired"}
	switch a.Kind {
	case ReplaceMember, ForceNewCluster, FinishRecovery, AbortRecovery, QuorumLost,
		RestoreFromBackup, FinishBackupRestore, AbortBackupRestore:
		rec.Status, rec.Reason, rec.Message = true, a.Reason, a.Message
	case Wait:
		switch a.Reason {
		case v1beta2.ReasonMemberUnhealthy, v1beta2.ReasonQuorumUnavailable, v1beta2.ReasonDegraded, v1beta2.ReasonMembersUnknown,
			v1beta2.ReasonMemberPodGone, v1beta2.ReasonMemberWithoutPod, v1beta2.ReasonRecovering,
			v1beta2.ReasonAllMembersLost, v1beta2.ReasonRestoringFromBackup, v1beta2.ReasonRecreatingPod:
			rec.Status, rec.Reason, rec.Message = true, a.Reason, a.Message
		}
	}

	scale := Condition{Type: v1beta2.ClusterConditionScaling, Reason: v1beta2.ReasonMembersUnknown, Message: "no etcd endpoint answered"}
	if known {
		learners := len(v.members) - len(v.voters)
		scale.Reason, scale.Message = v1beta2.ReasonAtSize, fmt.Sprintf("%d of %d voting members", len(v.voters), d.Size)
		switch {
		case len(v.voters) < d.Size || learners > 0 && len(v.voters) <= d.Size:
			scale.Status, scale.Reason = true, v1beta2.ReasonScalingUp
			scale.Message = fmt.Sprintf("%d of %d voting members", len(v.voters), d.Size)
		case len(v.voters) > d.Size:
			scale.Status, scale.Reason = true, v1beta2.ReasonScalingDown
			scale.Message = fmt.Sprintf("%d voting members, size %d", len(v.voters), d.Size)
		}
	} else if a.Kind == Bootstrap || a.Kind == FixPodImage {
		scale.Status, scale.Reason, scale.Message = true, v1beta2.ReasonBootstrapping, a.Message
	}

	up := Condition{Type: v1beta2.ClusterConditionUpgrading, Reason: v1beta2.ReasonMembersUnknown, Message: "no etcd endpoint answered"}
	if known {
		up.Reason, up.Message = v1beta2.ReasonUpToDate, "every member runs "+s.TargetVersion
		if err := CheckUpgrade(d, o); err != nil && !downgradeAllowed(d, o) { // downgrade.go
			up.Reason, up.Message = v1beta2.ReasonUpgradeRefused, err.Error()
		} else if tv, err := ParseVersion(d.Version); err == nil {
			var behind []string
			for _, m := range v.members {
				rv, err := ParseVersion(v.runningVersion(m))
				if err == nil && rv.Compare(tv) != 0 {
					behind = append(behind, m.Name)
				}
			}
			if len(behind) > 0 {
				sort.Strings(behind)
				up.Status, up.Reason = true, v1beta2.ReasonUpgrading
				up.Message = fmt.Sprintf("%d member(s) not yet on %s: %v", len(behind), tv, behind)
			}
			if len(behind) > 0 && downgradeAllowed(d, o) {
				up.Reason = v1beta2.ReasonDowngrading
			}
			if a.Kind == Wait && a.Reason == v1beta2.ReasonUpgradeWaitsForSnapshot { // snapshotgate.go
				up.Status, up.Reason, up.Message = false, a.Reason, a.Message
			}
			// The backup before a minor step (upgradebackup.go): no member moves yet.
			if a.Kind == TakeUpgradeBackup || a.Kind == Wait && (a.Reason == v1beta2.ReasonUpgradeBackupPending ||
				a.Reason == v1beta2.ReasonUpgradeBackupFailed || a.Reason == v1beta2.ReasonNoBackupTarget ||
				a.Reason == v1beta2.ReasonNoBackupStorage) {
				up.Status, up.Reason, up.Message = false, a.Reason, a.Message
			}
		}
	}
	s.Conditions = []Condition{avail, rec, scale, up}
	if d.Size == 0 {
		summarizeHibernation(a, &s) // hibernate.go
	}
	return s
}

// recordedMembers is the sorted, deduplicated list of the recorded member names.
func recordedMembers(known []string) []string {
	var out []string
	for _, n := range known {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
