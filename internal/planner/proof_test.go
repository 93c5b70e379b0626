package planner

import (
	"strings"
	"testing"
	"time"
)

// witnessed makes every reachable member answer with its own copy of the current
// member list, as a settled cluster does.
func witnessed(o *Observed) {
	o.MemberLists = nil
	for _, m := range o.Members {
		if m.Reachable {
			o.MemberLists = append(o.MemberLists, MemberList{From: m.ID, Members: append([]Member(nil), o.Members...)})
		}
	}
}

// listedBy makes member from's own list name the member id (a list that lags a
// removal, or a forged one).
func listedBy(o *Observed, from uint64, m Member) {
	for i := range o.MemberLists {
		if o.MemberLists[i].From == from {
			o.MemberLists[i].Members = append(o.MemberLists[i].Members, m)
			return
		}
	}
	panic("no list from that member")
}

func TestPlanOrphanNeedsQuorumOfLists(t *testing.T) {
	// c-old belonged to member 42, which the main list no longer shows.
	withOld := func() Observed {
		o := cluster(3)
		o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
		witnessed(&o)
		return o
	}
	old := Member{ID: 42, Name: "c-old", Reachable: false}
	runCases(t, []tcase{
		{"every member's own list lacks the pod's member: deleted", size(3), withOld,
			want{kind: DeletePod, name: "c-old"}},
		// Lists that disagree stop everything first (fork.go): a stale list is waited out.
		{"a majority's lists lack it, one stale list still has it: wait for the lists to agree", size(3), func() Observed {
			o := withOld()
			listedBy(&o, 3, old)
			return o
		}, want{kind: Wait, reason: "MembershipUnsettled"}},
		{"one list lacks it, the other members still list it: not deleted", size(3), func() Observed {
			o := withOld()
			listedBy(&o, 2, old)
			listedBy(&o, 3, old)
			return o
		}, want{kind: Wait, reason: "MembershipUnsettled"}},
		{"only the list the plan was made from: one member's word is not enough", size(3), func() Observed {
			o := withOld()
			o.MemberLists = o.MemberLists[:1]
			return o
		}, want{kind: Done}},
		{"no member asked for its own list: nothing deleted", size(3), func() Observed {
			o := withOld()
			o.MemberLists = nil
			return o
		}, want{kind: Done}},
		{"a list from a non-member does not count", size(3), func() Observed {
			o := withOld()
			o.MemberLists = append(o.MemberLists[:1], MemberList{From: 77, Members: o.Members}, MemberList{From: 78, Members: o.Members})
			return o
		}, want{kind: Done}},
		{"a learner's list does not count towards the voters' majority", size(5), func() Observed {
			o := withOld()
			withLearner(&o, 99, "c-new", true, true, true, 100)
			o.MemberLists = o.MemberLists[:1]
			o.MemberLists = append(o.MemberLists, MemberList{From: 99, Members: o.Members})
			return o
		}, want{kind: Wait}},
		{"the duplicate of a member's ID under another name is absent from every list: deleted", size(3), clusterWithPod(3, Pod{Name: "c-dup", MemberID: 2, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)}, true), want{kind: DeletePod, name: "c-dup"}},
	})
}

// TestPlanRecordsAreNotAuthority: status.recovery, status.bootstrapMembers and
// status.pendingMember may have been written by someone other than the controller.
// A record is acted on only where the observed objects show the controller made it.
func TestPlanRecordsAreNotAuthority(t *testing.T) {
	optIn := func() Desired { d := desired(3); d.QuorumLossRecovery = true; return d }
	// A record of a recovery whose member is a pod the controller did not create for
	// one (no marker): the healthy cluster's view, since that pod is one of its members.
	forgedOnMember := func() Observed {
		o := cluster(3)
		witnessed(&o)
		o.Recovery = &Recovery{Source: mname(1), SourceID: 1, Revision: 1, Member: mname(2), StartedAt: t0.Add(-time.Hour), Token: "tok"}
		return o
	}
	noDelete := func(t *testing.T, a Action) {
		if a.DeletePod {
			t.Errorf("%v deletes a pod on the word of a record", a)
		}
	}
	runCases(t, []tcase{
		{"recovery naming a member's pod, opt-in withdrawn: forgotten, nothing deleted", size(3), forgedOnMember,
			want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", check: noDelete}},
		{"recovery naming a member's pod, timed out: forgotten, nothing deleted", optIn, forgedOnMember,
			want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", check: noDelete}},
		{"recovery naming a member's pod that is alone in its list: never finished", optIn, func() Observed {
			o := forgedOnMember()
			o.Members = o.Members[1:2]
			o.LeaderID = 2
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", check: noDelete}},
		{"recovery marker of another recovery: forgotten", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning).RecoveryToken = "other"
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", check: noDelete}},
		{"recovery of a cluster with quorum, no new pod yet: never forked", optIn, func() Observed {
			o := cluster(3)
			witnessed(&o)
			o.Recovery = &Recovery{Source: mname(1), SourceID: 1, Revision: 1, Member: "c-fork", StartedAt: t0, Token: "tok"}
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", check: noDelete}},
		{"recovery from a source that is not an alive voter: never forked", optIn, func() Observed {
			o := recovering()
			o.Recovery.Source, o.Recovery.SourceID = mname(1), 1
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", check: noDelete}},
		{"recorded recovery the old cluster still calls for, no new pod yet: continued", optIn, recovering,
			want{kind: ForceNewCluster, from: 3}},
		{"new pod with the marker failed: aborted, and its pod deleted", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodFailed)
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryAborted", deletePod: yes()}},

		{"bootstrap members that do not cover the pods: no pod created", size(3), func() Observed {
			return Observed{Now: t0, BootstrapMembers: []string{"c-x", "c-y", "c-z"},
				Pods: []Pod{{Name: "c-a", Phase: PodRunning, CreatedAt: t0}}}
		}, want{kind: Wait, reason: "BootstrapUnknown"}},
		{"bootstrap members of another cluster's naming: not used", size(3), func() Observed {
			return Observed{Now: t0, NameSeed: "x", BootstrapMembers: []string{"other-a", "other-b", "other-c"}}
		}, want{kind: Bootstrap, check: func(t *testing.T, a Action) {
			for _, m := range a.Members {
				if !strings.HasPrefix(m.Name, "c-") {
					t.Errorf("member %s does not follow the cluster's naming", m.Name)
				}
			}
		}}},
		{"bootstrap members with a duplicate: not used", size(3), func() Observed {
			return Observed{Now: t0, NameSeed: "x", BootstrapMembers: []string{"c-a", "c-a", "c-b"}}
		}, want{kind: Bootstrap, check: checkBootstrapNames(3)}},
		{"a pod with a member ID proves the cluster formed: no bootstrap step", size(3), func() Observed {
			return Observed{Now: t0, BootstrapMembers: []string{"c-a", "c-b", "c-c"},
				Pods: []Pod{{Name: "c-a", MemberID: 7, Phase: PodRunning, CreatedAt: t0}}}
		}, want{kind: Wait, reason: "MembersUnknown"}},

		{"pending record naming a voter's pod for a learner: the voter's pod stays matched", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-l99", false, false, false, 0)
			o.Pending = &PendingMember{Name: mname(2), ID: 99, AddedAt: t0.Add(-time.Hour)}
			witnessed(&o)
			return o
		}, want{check: func(t *testing.T, a Action) {
			if a.Kind == RemoveMember && a.DeletePod {
				t.Errorf("%v deletes a pod on the word of the pending record", a)
			}
		}}},
		{"pending record older than its learner's pod: the pod's age counts", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-l99", false, false, true, 0)
			o.Pending.AddedAt = t0.Add(-time.Hour)
			pod(&o, "c-l99").CreatedAt = t0.Add(-time.Minute)
			witnessed(&o)
			return o
		}, want{kind: Wait, reason: "MemberStarting"}},
		{"pending record of a name outside the cluster's naming: ignored", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-l99", false, false, false, 0)
			o.Pending = &PendingMember{Name: "victim", ID: 99, AddedAt: t0.Add(-time.Second)}
			return o
		}, want{check: func(t *testing.T, a Action) {
			if a.Name == "victim" {
				t.Errorf("%v acts on a name from outside the cluster", a)
			}
		}}},
	})
}

const (
	imageGood = "quay.io/coreos/etcd:v3.7.3"
	imageBad  = "quay.io/coreos/etcd:v3.6.99"
)

// stuckBootstrap is a 3-member bootstrap whose pods were created on a version that
// does not exist: each pod's etcd container waits for an image that never comes.
// everyStuckPod is stuckBootstrap with edit applied to each pod.
func everyStuckPod(edit func(*Pod)) func() Observed {
	return func() Observed {
		o := stuckBootstrap()
		for i := range o.Pods {
			edit(&o.Pods[i])
		}
		return o
	}
}

func stuckBootstrap() Observed {
	o := Observed{Now: t0, BootstrapMembers: []string{"c-a", "c-b", "c-c"}}
	for _, n := range o.BootstrapMembers {
		o.Pods = append(o.Pods, Pod{Name: n, Phase: PodPending, Version: "3.6.99", Image: imageBad, EtcdNeverRan: true,
			CreatedAt: t0.Add(-10 * time.Minute), UnhealthySince: t0.Add(-10 * time.Minute)})
	}
	return o
}

func fixedSpec() Desired { d := desired(3); d.Image = imageGood; return d }

func TestPlanStuckBootstrapFollowsTheSpec(t *testing.T) {
	runCases(t, []tcase{
		{"spec corrected: the first pod's image is set in place", fixedSpec, stuckBootstrap,
			want{kind: FixPodImage, name: "c-a", version: v37, reason: "CorrectingBootstrap"}},
		{"one pod done: the next", fixedSpec, func() Observed {
			o := stuckBootstrap()
			pod(&o, "c-a").Image, pod(&o, "c-a").Version = imageGood, v37
			return o
		}, want{kind: FixPodImage, name: "c-b"}},
		{"every pod on the spec's image: wait for the cluster to form", fixedSpec, everyStuckPod(func(p *Pod) { p.Image, p.Version = imageGood, v37 }), want{kind: Wait, reason: "WaitingForClusterToForm"}},
		{"a repository corrected: same version, other image", func() Desired {
			d := fixedSpec()
			d.Image = "registry.example/etcd:v3.7.3"
			return d
		}, everyStuckPod(func(p *Pod) { p.Image, p.Version = "regsitry.example/etcd:v3.7.3", v37 }), want{kind: FixPodImage, name: "c-a", version: v37}},
		{"a running etcd is left to form the cluster", fixedSpec, everyStuckPod(func(p *Pod) { p.EtcdRunning, p.EtcdNeverRan = true, false }), want{kind: Wait, reason: "WaitingForClusterToForm"}},
		{"a crash-looping etcd that ran is moved only within the allowed skew", func() Desired {
			d := fixedSpec()
			return d
		}, everyStuckPod(func(p *Pod) {
			p.Version, p.Image, p.EtcdNeverRan, p.CrashLooping = "3.5.21", "quay.io/coreos/etcd:v3.5.21", false, true
		}), want{kind: Wait, reason: "WaitingForClusterToForm"}},
		{"a crash-looping etcd within the skew is moved", fixedSpec, everyStuckPod(func(p *Pod) {
			p.Version, p.Image, p.EtcdNeverRan, p.CrashLooping = v36, "quay.io/coreos/etcd:v3.6.16", false, true
		}), want{kind: FixPodImage, name: "c-a", version: v37}},
		{"never once the cluster was bootstrapped", fixedSpec, func() Observed {
			o := stuckBootstrap()
			o.Bootstrapped = true
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"never when a pod proves the cluster formed", fixedSpec, func() Observed {
			o := stuckBootstrap()
			pod(&o, "c-b").MemberID = 7
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"never while a member answers", fixedSpec, func() Observed {
			o := stuckBootstrap()
			o.MembersKnown = true
			o.Members = []Member{{ID: 1, Name: "c-a", Reachable: true, Version: v37}}
			o.LeaderID = 1
			return o
		}, want{kind: AddLearner}},
		{"never on a record that does not fit the pods", fixedSpec, func() Observed {
			o := stuckBootstrap()
			o.BootstrapMembers = []string{"c-x", "c-y", "c-z"}
			return o
		}, want{kind: Wait, reason: "BootstrapUnknown"}},
	})
}
