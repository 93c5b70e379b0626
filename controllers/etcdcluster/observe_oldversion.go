package etcdcluster

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// A cluster CoreOS etcd-operator created on an etcd older than planner.MinSupportedVersion
// (3.2–3.4; CoreOS 0.9.4's default was 3.2.13) cannot be run here: there are no such
// binaries, and those releases lack what the member pods rely on. Refusing it outright
// (UnsupportedVersion) would leave its owner blind, so it is adopted read-only: its
// members are observed as a paused cluster's are (status.members, the member gauges,
// the largest database) and the Available condition says, with reason
// UpgradePathRequired, which minor steps remain and the two ways to take them
// (planner.OldVersionPath). Nothing is created, changed or deleted: no pod, no claim, no
// Service, no member; the status is the only write.

// adoptOldCoreOSCluster adopts c read-only when it is such a cluster: never formed under
// this operator, spec.version older than the oldest run here, and member pods that
// CoreOS made under its control. ok is false for anything else (a new cluster asking for
// an old version is refused as before).
func (r *Reconciler) adoptOldCoreOSCluster(ctx context.Context, c *etcdv1beta2.EtcdCluster) (ctrl.Result, bool) {
	if c.Status.Bootstrapped {
		return ctrl.Result{}, false
	}
	spec, err := planner.ParseVersion(render.ClusterVersion(c.Spec))
	if err != nil {
		return ctrl.Result{}, false
	}
	if _, _, old := planner.OldVersionPath(spec); !old {
		return ctrl.Result{}, false
	}
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		return ctrl.Result{}, false
	}
	own := ownPods(c, pods)
	coreOS := false
	for _, p := range own {
		coreOS = coreOS || madeByCoreOS(p)
	}
	if !coreOS {
		return ctrl.Result{}, false
	}

	ans := r.askOldMembers(ctx, c, own)
	reportMembers(&c.Status.Members, ans.members, ans.statuses, memberDetailsLimit(c.Spec.Size))
	ready, unready, oldest, dbSize := oldClusterView(spec, own, ans)
	c.Status.Members.Ready, c.Status.Members.Unready = ready, unready
	c.Status.Size = len(ready) + len(unready)
	c.Status.CurrentVersion = oldest.String()
	c.Status.TargetVersion = spec.String()
	_, msg, _ := planner.OldVersionPath(oldest)
	quorum := len(ready) > 0 && len(ready) >= planner.Quorum(c.Status.Size)
	if quorum {
		c.Status.Phase = etcdv1beta2.ClusterPhaseRunning
	}
	if c.Status.Reason != msg {
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonUpgradePathRequired, msg)
	}
	c.Status.Reason = msg
	r.setCondition(c, conditionUpdate{Type: etcdv1beta2.ClusterConditionAvailable, Status: quorum,
		Reason: etcdv1beta2.ReasonUpgradePathRequired, Message: msg}, r.Now().UTC().Format(timeFormat))
	recordAction(c, planner.Action{Kind: planner.Wait}, nil, false) // the member and availability gauges
	if dbSize > 0 {
		clusterDBSize.WithLabelValues(c.Namespace, c.Name).Set(float64(dbSize))
	}
	return ctrl.Result{RequeueAfter: steadyResync}, true
}

// askOldMembers asks the members for their list and status, as observePaused does;
// nothing answers when no pod is dialable or no client can be made.
func (r *Reconciler) askOldMembers(ctx context.Context, c *etcdv1beta2.EtcdCluster, own map[string]*corev1.Pod) etcdAnswers {
	endpoints, _ := r.dialTargets(c, own, false)
	if len(endpoints) == 0 {
		return etcdAnswers{}
	}
	var auth authObservation // CoreOS clusters never had this operator's auth turned on
	admin, err := r.connect(ctx, c, endpoints, &auth)
	if err != nil {
		log.FromContext(ctx).V(1).Info("old CoreOS cluster: no etcd client", "err", err.Error())
		return etcdAnswers{}
	}
	return askMembers(ctx, admin, endpoints)
}

// oldClusterView is what status says of such a cluster: the members that answered
// (ready) and the others (unready), by etcd's member list when one answered, else by the
// pods' readiness; the oldest version running (etcd's answers, else the pods' version
// annotation, else the spec's), from which the remaining steps count; the largest
// database reported.
func oldClusterView(spec planner.Version, own map[string]*corev1.Pod, ans etcdAnswers) (ready, unready []string, oldest planner.Version, dbSize int64) {
	oldest = spec
	older := func(s string) {
		if v, err := planner.ParseVersion(s); err == nil && v.Compare(oldest) < 0 {
			oldest = v
		}
	}
	answered := map[uint64]bool{}
	for _, s := range ans.statuses {
		if s.Err != nil {
			continue
		}
		answered[s.MemberID] = true
		older(s.Version)
		dbSize = max(dbSize, s.DBSize)
	}
	if ans.members != nil {
		for _, m := range ans.members {
			name := reportedName(memberName(m), m.ID)
			if answered[m.ID] {
				ready = append(ready, name)
			} else {
				unready = append(unready, name)
			}
		}
	} else {
		for name, p := range own {
			if podReady(p) {
				ready = append(ready, name)
			} else {
				unready = append(unready, name)
			}
		}
	}
	for _, p := range own {
		older(p.Annotations[render.AnnotationVersion])
	}
	sort.Strings(ready)
	sort.Strings(unready)
	return ready, unready, oldest, dbSize
}
