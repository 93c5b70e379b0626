package etcdcluster

import (
	"context"
	"sort"
	"strings"

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
// this operator, member pods that CoreOS made under its control, and spec.version older
// than the oldest run here OR some CoreOS pod still on such a version. The second case is
// an upgrade to 3.5 under CoreOS's operator still rolling out (spec.version already 3.5,
// some pod still on 3.4): taking the cluster over then would have two operators restart
// members of one cluster, and this one would restart a 3.4 member itself. ok is false for
// anything else (a new cluster asking for an old version is refused as before).
func (r *Reconciler) adoptOldCoreOSCluster(ctx context.Context, c *etcdv1beta2.EtcdCluster) (ctrl.Result, bool) {
	if c.Status.Bootstrapped {
		return ctrl.Result{}, false
	}
	spec, err := planner.ParseVersion(render.ClusterVersion(c.Spec))
	if err != nil {
		return ctrl.Result{}, false
	}
	_, _, specOld := planner.OldVersionPath(spec)
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		return ctrl.Result{}, false
	}
	own := ownPods(c, pods)
	coreOS, podOld := false, false
	for _, p := range own {
		if madeByCoreOS(p) {
			coreOS = true
			if v, ok := oldestOfPod(p); ok {
				_, _, old := planner.OldVersionPath(v)
				podOld = podOld || old
			}
		}
	}
	if !coreOS || !specOld && !podOld {
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
	return askMembers(ctx, admin, endpoints, nil)
}

// oldestOfPod is the oldest etcd version a pod names: its version annotation, its etcd
// container's image tag, and the image the kubelet reports that container running (which
// lags the spec's while a CoreOS upgrade restarts the pod). ok is false when none parses.
func oldestOfPod(p *corev1.Pod) (oldest planner.Version, ok bool) {
	consider := func(s string) {
		if v, err := planner.ParseVersion(s); err == nil && (!ok || v.Compare(oldest) < 0) {
			oldest, ok = v, true
		}
	}
	consider(p.Annotations[render.AnnotationVersion])
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == etcdContainerName(p) {
			consider(imageTag(ctr.Image))
		}
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == etcdContainerName(p) {
			consider(imageTag(st.Image))
		}
	}
	return oldest, ok
}

// etcdContainerName is the name of the pod's etcd container: "etcd", as both operators
// name it, or the first container's.
func etcdContainerName(p *corev1.Pod) string {
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == "etcd" {
			return ctr.Name
		}
	}
	if len(p.Spec.Containers) > 0 {
		return p.Spec.Containers[0].Name
	}
	return ""
}

// imageTag is the tag of an image reference ("" when it has none): what follows the last
// ":" after the last "/", a digest cut off.
func imageTag(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		return image[i+1:]
	}
	return ""
}

// oldClusterView is what status says of such a cluster: the members that answered
// (ready) and the others (unready), by etcd's member list when one answered, else by the
// pods' readiness; the oldest version running (etcd's answers, else the pods' version
// annotation and image, else the spec's), from which the remaining steps count; the largest
// database reported.
func oldClusterView(spec planner.Version, own map[string]*corev1.Pod, ans etcdAnswers) (ready, unready []string, oldest planner.Version, dbSize int64) {
	// The oldest any member runs, whatever the spec says: starting from the spec would
	// report a member newer than it (a rollout under CoreOS's operator ahead of a spec
	// lowered since) as running the spec's version.
	found := false
	older := func(s string) {
		if v, err := planner.ParseVersion(s); err == nil && (!found || v.Compare(oldest) < 0) {
			oldest, found = v, true
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
		if v, ok := oldestOfPod(p); ok {
			older(v.String())
		}
	}
	if !found {
		oldest = spec
	}
	sort.Strings(ready)
	sort.Strings(unready)
	return ready, unready, oldest, dbSize
}
