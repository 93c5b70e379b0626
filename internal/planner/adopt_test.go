package planner

import (
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Clusters that CoreOS etcd-operator 0.9.4 created are taken over as they run. Its
// status records neither bootstrapped nor a cluster ID, its member names are
// <cluster>-<10 random characters>, and its pods carry no member-ID annotation: what
// the planner knows of them comes from etcd's answers alone.

// coreOSNames are member names as CoreOS drew them.
var coreOSNames = []string{"c-b4x2kq9wzt", "c-fm7p2dnlrx", "c-qz5vh8kcjb", "c-t2nw9gxl4d", "c-zk8r5mfp2v"}

// coreOSCluster is an n-member cluster CoreOS made, as the controller observes it once
// its members answer: Bootstrapped comes from that member list (status had none), and
// each pod's member from the member that answered from it.
func coreOSCluster(n int) Observed {
	o := cluster(n)
	for i := range o.Members {
		name := coreOSNames[i]
		o.Members[i].Name = name
		o.Members[i].PeerURLs = []string{"http://" + name + ".c.default.svc:2380"}
		o.Pods[i].Name = name
	}
	witnessed(&o)
	return o
}

// coreOSBeforeAnswers is the same cluster before any member has answered: the
// controller has only what CoreOS's status and pods say, which proves nothing.
func coreOSBeforeAnswers(n int) Observed {
	o := coreOSCluster(n)
	o.Bootstrapped, o.MembersKnown = false, false
	o.Members, o.MemberLists, o.LeaderID = nil, nil, 0
	for i := range o.Pods {
		o.Pods[i].MemberID = 0
	}
	return o
}

func TestPlanAdoptsCoreOSClusters(t *testing.T) {
	runCases(t, []tcase{
		{"a healthy CoreOS cluster is adopted as it runs", size(3), func() Observed {
			return coreOSCluster(3)
		}, want{kind: Done}},
		{"a one-member CoreOS cluster is adopted as it runs", size(1), func() Observed {
			return coreOSCluster(1)
		}, want{kind: Done}},
		{"before any member answers, CoreOS's pods are waited on: no bootstrap beside them, nothing deleted", size(3), func() Observed {
			return coreOSBeforeAnswers(3)
		}, want{kind: Wait, reason: v1beta2.ReasonBootstrapUnknown}},
		{"a CoreOS member that does not answer yet keeps its member within the grace", size(3), func() Observed {
			o := coreOSCluster(3)
			unreachable(&o, 2, t0.Add(-20*time.Second))
			witnessed(&o)
			return o
		}, want{kind: Wait}},
		{"a CoreOS cluster stopped in the middle of a scale-up grows by the usual rules", size(3), func() Observed {
			return coreOSCluster(1)
		}, want{kind: AddLearner}},
		{"a CoreOS member dead at takeover (its pod Failed, never restarted) is replaced", size(5), func() Observed {
			o := coreOSCluster(5)
			unreachable(&o, 5, t0.Add(-time.Minute))
			pod(&o, coreOSNames[4]).Phase = PodFailed
			pod(&o, coreOSNames[4]).Terminated = true
			witnessed(&o)
			return o
		}, want{kind: ReplaceMember, id: 5}},
		{"a CoreOS pod whose member CoreOS removed goes on a majority's word", size(3), func() Observed {
			o := coreOSCluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-removed123", Phase: PodFailed, CreatedAt: t0.Add(-time.Hour)})
			witnessed(&o)
			return o
		}, want{kind: DeletePod, name: "c-removed123"}},
		{"a CoreOS pod missing from one member's list only is kept", size(3), func() Observed {
			o := coreOSCluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-removed123", Phase: PodFailed, CreatedAt: t0.Add(-time.Hour)})
			o.MemberLists = o.MemberLists[:1]
			return o
		}, want{kind: Done}},
	})
}
