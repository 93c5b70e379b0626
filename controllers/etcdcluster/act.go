package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// act performs one planned step. Every step is idempotent: repeating it after an operator
// restart, or after a partial failure, converges to the same state.
func (r *Reconciler) act(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) (ctrl.Result, error) {
	lg := log.FromContext(ctx).WithValues("action", a.Kind.String())
	if a.ClearPending {
		c.Status.PendingMember = nil
	}
	needAdmin := func() error {
		if o.admin == nil {
			return fmt.Errorf("no reachable etcd endpoint for %s", a.Kind)
		}
		return nil
	}
	switch a.Kind {
	case planner.Wait:
		return ctrl.Result{RequeueAfter: clampRequeue(a.RequeueAfter)}, nil

	case planner.Done:
		return ctrl.Result{RequeueAfter: steadyResync}, nil

	case planner.Bootstrap:
		names := make([]string, 0, len(a.Members))
		for _, m := range a.Members {
			names = append(names, m.Name)
		}
		// Record the initial cluster before creating any pod, so an operator restarted
		// half-way creates the remaining pods with the very same --initial-cluster.
		if !slices.Equal(c.Status.BootstrapMembers, names) {
			c.Status.BootstrapMembers = names
			c.Status.Phase = etcdv1beta2.ClusterPhaseCreating
			if err := o.status.checkpoint(ctx); err != nil {
				return ctrl.Result{}, err
			}
		}
		initial := render.InitialCluster(c, names, r.ClusterDomain)
		members := make([]render.Member, 0, len(names))
		for _, n := range names {
			members = append(members, render.Member{Name: n, InitialClusterState: render.StateNew, InitialCluster: initial, Version: a.Version})
		}
		if err := r.createMembers(ctx, c, members); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonBootstrapping, "creating %d initial members of etcd %s: %v", len(names), a.Version, names)
		lg.Info("bootstrapping", "members", names)

	case planner.CreatePod:
		m := render.Member{Name: a.Name, ID: idString(a.ID), Version: a.Version,
			InitialClusterState: render.StateExisting, InitialCluster: r.initialClusterOf(c, o.members, a.Name)}
		if !c.Status.Bootstrapped && slices.Contains(c.Status.BootstrapMembers, a.Name) {
			m.InitialClusterState = render.StateNew
			m.InitialCluster = render.InitialCluster(c, c.Status.BootstrapMembers, r.ClusterDomain)
		}
		if err := r.createMembers(ctx, c, []render.Member{m}); err != nil {
			return ctrl.Result{}, err
		}
		if a.Reason == etcdv1beta2.ReasonRecreatingPod {
			r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonPodRecreated, "%s", a.Message)
		} else {
			r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberPodCreated, "created pod for member %s", a.Name)
		}

	case planner.AddLearner:
		if err := needAdmin(); err != nil {
			return ctrl.Result{}, err
		}
		res, err := o.admin.EnsureLearner(ctx, []string{render.PeerURL(c, a.Name, r.ClusterDomain)})
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("add learner %s: %w", a.Name, err)
		}
		// Persist the in-flight step before starting the pod: a restarted operator must
		// finish this learner rather than add another.
		c.Status.PendingMember = &etcdv1beta2.PendingMember{Name: a.Name, ID: idString(res.Member.ID), AddedAt: metav1.NewTime(r.Now())}
		if err := o.status.checkpoint(ctx); err != nil {
			return ctrl.Result{}, err
		}
		m := render.Member{Name: a.Name, ID: idString(res.Member.ID), Version: a.Version,
			InitialClusterState: render.StateExisting, InitialCluster: r.initialClusterOf(c, res.Members, a.Name)}
		if err := r.createMembers(ctx, c, []render.Member{m}); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberAdded, "added learner %s (%s)", a.Name, idString(res.Member.ID))
		lg.Info("learner added", "member", a.Name, "id", idString(res.Member.ID))

	case planner.PromoteLearner:
		if err := needAdmin(); err != nil {
			return ctrl.Result{}, err
		}
		if _, err := o.admin.EnsurePromoted(ctx, a.ID); err != nil {
			return ctrl.Result{}, fmt.Errorf("promote %s: %w", a.Name, err)
		}
		c.Status.PendingMember = nil
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberPromoted, "promoted learner %s (%s) to voting member", a.Name, idString(a.ID))

	case planner.MoveLeader:
		if err := needAdmin(); err != nil {
			return ctrl.Result{}, err
		}
		if err := o.admin.MoveLeader(ctx, a.To); err != nil {
			return ctrl.Result{}, fmt.Errorf("move leader to %s: %w", idString(a.To), err)
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonLeaderMoved, "moved leadership from %s to %s: %s", idString(a.From), idString(a.To), a.Message)

	case planner.RemoveMember, planner.ReplaceMember:
		if err := needAdmin(); err != nil {
			return ctrl.Result{}, err
		}
		if _, err := o.admin.EnsureRemoved(ctx, a.ID); err != nil {
			return ctrl.Result{}, fmt.Errorf("remove member %s: %w", a.Name, err)
		}
		if a.DeletePod && a.Name != "" {
			if err := r.deleteMember(ctx, c, o, a.Name); err != nil {
				return ctrl.Result{}, err
			}
		}
		reason := etcdv1beta2.EventReasonMemberRemoved
		if a.Kind == planner.ReplaceMember {
			reason = etcdv1beta2.EventReasonMemberReplaced
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, reason, "removed member %s (%s): %s", a.Name, idString(a.ID), a.Message)

	case planner.DeletePod:
		if a.KeepClaim {
			// The member restarts on its claim under a new pod of the same name.
			if err := r.deleteOwned(ctx, c, &corev1.Pod{}, a.Name, observedUID(o, a.Name)); err != nil {
				return ctrl.Result{}, err
			}
		} else if err := r.deleteMember(ctx, c, o, a.Name); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonPodDeleted, "deleted pod %s: %s", a.Name, a.Message)

	case planner.UpgradeMember:
		if err := r.upgradeMember(ctx, c, a.Name, a.Version); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberUpgrading, "restarting member %s on etcd %s", a.Name, a.Version)

	case planner.FixPodImage:
		if err := r.upgradeMember(ctx, c, a.Name, a.Version); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonBootstrapPodCorrected, "%s", a.Message)

	case planner.RefuseUpgrade, planner.QuorumLost:
		// Reported through conditions and a warning event; nothing is touched.
		r.Recorder.Event(c, corev1.EventTypeWarning, a.Reason, a.Message)
		return ctrl.Result{RequeueAfter: steadyResync}, nil

	case planner.ForceNewCluster:
		if err := r.startRecovery(ctx, c, o, a); err != nil {
			return ctrl.Result{}, err
		}

	case planner.FinishRecovery:
		if err := r.finishRecovery(ctx, c, o, a); err != nil {
			return ctrl.Result{}, err
		}

	case planner.AbortRecovery:
		if c.Status.Recovery != nil {
			// Only the planner's word that the pod is this recovery's (it carries the
			// recovery's marker) lets it go; the record alone never does.
			if a.DeletePod && a.Name == c.Status.Recovery.Member {
				if err := r.deleteMember(ctx, c, o, a.Name); err != nil {
					return ctrl.Result{}, err
				}
			}
			c.Status.Recovery = nil
			if err := o.status.checkpoint(ctx); err != nil {
				return ctrl.Result{}, err
			}
		}
		r.Recorder.Event(c, corev1.EventTypeWarning, a.Reason, a.Message)

	default:
		return ctrl.Result{}, fmt.Errorf("unknown action %v", a.Kind)
	}
	return ctrl.Result{RequeueAfter: activeResync}, nil
}

// clampRequeue keeps a planner's wait hint within what the watch-driven loop needs.
func clampRequeue(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return activeResync
	case d > steadyResync:
		return steadyResync
	}
	return d
}

// initialClusterOf is --initial-cluster for a member joining an existing cluster: etcd
// requires it to list every current member (learners and unstarted ones too) by peer URL.
func (r *Reconciler) initialClusterOf(c *etcdv1beta2.EtcdCluster, members []etcdadmin.Member, self string) string {
	names := []string{}
	for _, m := range members {
		n := m.Name
		if n == "" {
			n = memberNameFromPeerURLs(m.PeerURLs)
		}
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if !slices.Contains(names, self) {
		names = append(names, self)
	}
	slices.Sort(names)
	return render.InitialCluster(c, names, r.ClusterDomain)
}

// createMembers creates the PVCs and pods the chart renders for members; existing ones are
// left as they are.
func (r *Reconciler) createMembers(ctx context.Context, c *etcdv1beta2.EtcdCluster, members []render.Member) error {
	restore, err := r.restoreStep(ctx, c, members)
	if err != nil {
		return err
	}
	objs, err := r.renderer.Render(render.Input{Cluster: c, ClusterDomain: r.ClusterDomain, Members: members, Restore: restore})
	if err != nil {
		return fmt.Errorf("render member pods: %w", err)
	}
	recoveryToken := map[string]string{}
	for _, m := range members {
		if m.Recovery != nil {
			recoveryToken[m.Name] = m.Recovery.Token
		}
	}
	// PVCs first: a pod referencing a missing claim would not schedule.
	for _, kindPass := range []func(client.Object) bool{isPVC, isPod} {
		for _, obj := range objs {
			if !kindPass(obj) {
				continue
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				markRecovery(pod, recoveryToken[pod.Name])
			}
			if err := controllerutil.SetControllerReference(c, obj, r.Scheme); err != nil {
				return err
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				stampSpecFingerprint(pod, c, r.ClusterDomain)
			}
			if err := r.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
			}
		}
	}
	return nil
}

// markRecovery puts the recovery marker on the new member's pod of a quorum-loss
// recovery and makes sure no other pod carries one (spec.pod.annotations could).
func markRecovery(pod *corev1.Pod, token string) {
	delete(pod.Annotations, render.AnnotationRecoveryToken)
	if token == "" {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[render.AnnotationRecoveryToken] = token
}

func isPVC(o client.Object) bool { _, ok := o.(*corev1.PersistentVolumeClaim); return ok }
func isPod(o client.Object) bool { _, ok := o.(*corev1.Pod); return ok }

// deleteMember deletes a removed member's pod and its PVC: a removed member can never
// rejoin with its old data, and its name is never reused. Each goes only if this
// cluster controls it (deleteOwned); the claim is not touched if the pod was refused.
func (r *Reconciler) deleteMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, name string) error {
	if err := r.deleteOwned(ctx, c, &corev1.Pod{}, name, observedUID(o, name)); err != nil {
		return err
	}
	return r.deleteOwned(ctx, c, &corev1.PersistentVolumeClaim{}, name, "")
}

// observedUID is the UID of the pod the plan was made on, if the observation had one.
func observedUID(o *observation, name string) types.UID {
	if o != nil {
		if p := o.pods[name]; p != nil {
			return p.UID
		}
	}
	return ""
}

// notControlledError is a deletion refused because the object is not this cluster's.
type notControlledError struct{ msg string }

func (e *notControlledError) Error() string { return e.msg }

// deleteOwned deletes the object of obj's kind named name only if a fresh read from
// the API server shows it controlled by c (and, when expectUID is set, that it is still
// the object the plan was made on), and deletes it with that read's UID as a
// precondition, so an object recreated under the name in between is never hit. A
// missing object is done. Anything else is left alone with a warning event and a
// notControlledError, never silently.
func (r *Reconciler) deleteOwned(ctx context.Context, c *etcdv1beta2.EtcdCluster, obj client.Object, name string, expectUID types.UID) error {
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
	if err := r.freshReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("read %s %s before deleting it: %w", kind, name, err)
	}
	var why string
	switch {
	case !metav1.IsControlledBy(obj, c):
		why = fmt.Sprintf("%s %s/%s is not controlled by EtcdCluster %s (uid %s); not deleting it", kind, c.Namespace, name, c.Name, c.UID)
	case expectUID != "" && obj.GetUID() != expectUID:
		why = fmt.Sprintf("%s %s/%s was replaced (uid %s, planned on %s); not deleting it", kind, c.Namespace, name, obj.GetUID(), expectUID)
	}
	if why != "" {
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonDeletionRefused, why)
		return &notControlledError{msg: why}
	}
	uid := obj.GetUID()
	if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s: %w", kind, name, err)
	}
	return nil
}

// freshReader reads from the API server, not the cache: what is deleted is decided on
// the object as it is now.
func (r *Reconciler) freshReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// upgradeMember changes the image of one member's etcd container in place. The kubelet
// restarts the container on the same pod and volume, so the member keeps its data and ID;
// etcd hands leadership off on SIGTERM.
func (r *Reconciler) upgradeMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, name, version string) error {
	var pod corev1.Pod
	if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &pod); err != nil {
		return fmt.Errorf("get pod %s: %w", name, err)
	}
	if !metav1.IsControlledBy(&pod, c) {
		why := fmt.Sprintf("pod %s/%s is not controlled by EtcdCluster %s; not changing its image", c.Namespace, name, c.Name)
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonDeletionRefused, why)
		return &notControlledError{msg: why}
	}
	image := render.Image(c.Spec, version)
	orig := pod.DeepCopy()
	changed := false
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == render.ContainerName && pod.Spec.Containers[i].Image != image {
			pod.Spec.Containers[i].Image = image
			changed = true
		}
	}
	if pod.Annotations[render.AnnotationVersion] != version {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[render.AnnotationVersion] = version
		changed = true
	}
	if !changed {
		return nil
	}
	if err := r.Patch(ctx, &pod, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("set image of %s to %s: %w", name, image, err)
	}
	return nil
}

func idString(id uint64) string {
	if id == 0 {
		return ""
	}
	return etcdadmin.FormatID(id)
}
