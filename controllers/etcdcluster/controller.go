// Package etcdcluster is the EtcdCluster controller: it keeps an etcd cluster's members,
// pods and services as the EtcdCluster asks. Each reconcile observes the pods and etcd,
// asks internal/planner for the next step, performs that one step and writes status.
// Files are named by the phase they belong to, each test file beside its source:
//
//   - observe.go, observe_*.go: what the cluster is (pods, claims, etcd, nodes), into the
//     reconcile's observation, which also carries what later phases find for status;
//   - act.go, act_*.go: the one step (act.go dispatches it) and the side steps that run
//     beside it (services, budget, storage);
//   - status.go, status_*.go: conditions and the rest of status, written when the
//     reconcile ends (status_writer.go);
//   - memory.go, memory_*.go: what is kept of each cluster from one reconcile to the next;
//   - wiring: controller.go (Reconciler, NewReconciler, Reconcile), watch_*.go, metrics*.go,
//     scope.go and shard.go (which clusters this instance manages).
package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/operatorimage"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
)

// Requeue intervals. Pod events wake the reconciler at once (watch-driven); these only
// bound how stale the view of etcd itself (leader, raft progress) may become.
const (
	steadyResync   = 30 * time.Second
	activeResync   = 2 * time.Second
	etcdCallBudget = 10 * time.Second
)

// DefaultWorkers is how many EtcdClusters are reconciled at once unless
// --cluster-workers says otherwise.
const DefaultWorkers = 4

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete

// Reconciler keeps an etcd cluster's members, pods and services as its
// EtcdCluster asks: observe (pods + etcd), plan (internal/planner), act (one step), status.
type Reconciler struct {
	client.Client
	// APIReader reads from the API server, bypassing the cache: objects are checked
	// on it at the moment they would be deleted. Nil means the client.
	APIReader     client.Reader
	Scheme        *runtime.Scheme
	Recorder      record.EventRecorder
	ClusterDomain string
	// OperatorImage runs the data-copy step of a quorum-loss recovery; empty means
	// operatorimage.Default.
	OperatorImage string
	// MinQuorumLossGrace is the shortest quorum-loss grace a cluster's annotation can
	// ask for; zero means DefaultMinQuorumLossGrace. It is the operator's setting, not
	// the cluster's.
	MinQuorumLossGrace time.Duration
	// Scope selects the clusters this instance manages by their scope annotation; empty
	// means all (ScopeAll).
	Scope Scope
	// Shard selects the clusters this instance manages by a label or annotation value
	// (shard.go); the zero Shard means all.
	Shard Shard
	// ClientServiceTypes are the client Service types a cluster may ask for beyond
	// ClusterIP (the operator's setting: a NodePort or LoadBalancer Service exposes etcd
	// outside the cluster, which a tenant who may create EtcdClusters but not Services
	// must not be able to do through the operator). Empty: ClusterIP only.
	ClientServiceTypes []corev1.ServiceType
	// ClientServiceMetadata lets clusters put annotations and labels on their client
	// Service (--allow-client-service-metadata): off by default, since controllers of the
	// Kubernetes cluster act on them (exposing a Service through a tunnel or a global
	// mesh, publishing DNS for it) as on a Service type.
	ClientServiceMetadata bool
	// PriorityClasses are the PriorityClasses member pods may name
	// (--allowed-priority-classes); empty: any but Kubernetes' own system- classes
	// (act_resources_priority.go).
	PriorityClasses []string
	// ClusterIssuers are the cert-manager ClusterIssuers clusters may name
	// (--allowed-cluster-issuers; "*": any). Empty: none, only an Issuer in the cluster's
	// own namespace: a ClusterIssuer is shared by every namespace, and what it signs for
	// one cluster another cluster of the same issuer accepts on its client port.
	ClusterIssuers []string

	// Workers is how many EtcdClusters are reconciled at once (--cluster-workers); zero
	// means DefaultWorkers. A reconcile of a cluster whose member is starting holds its
	// worker while etcd's answers wait on that member, so a fleet created at once
	// queues behind them.
	Workers int

	// WatchNamespace is the one namespace the operator manages (--watch-namespace);
	// empty: all. The manager's caches get it from controllers.ApplyCacheOptions; the
	// Certificates cache, made apart (act_tls_certmanager.go), from here.
	WatchNamespace string

	// Now is the clock; tests may replace it.
	Now func() time.Time
	// AfterAction is a failpoint for tests: when set, it runs after every action that
	// succeeded, before status is written, with the reconcile's context and the cluster
	// as namespace/name. A test that blocks in it until that context ends and then stops
	// the operator simulates an operator killed between two steps. Nil in production.
	AfterAction func(ctx context.Context, cluster string, action planner.Action)
	// PinKey verifies the operator's signatures on restore pins (act_restorepin.go); nil:
	// no pin is trusted and every restore runs the snapshot checks.
	PinKey []byte

	renderer *render.Renderer
	// cmSettle is when cert-manager's Secrets were last seen changing (act_tls_certmanager.go).
	cmSettle *cmSettle
	etcdLog  logr.Logger
	// memory is what is kept of each cluster across reconciles (memory.go).
	*memory
	// S3Access is what the operator lends to reach a total-loss restore's backups
	// (--allow-ambient-s3-credentials).
	S3Access backupstorage.S3Access
	// Hasher reads a total-loss candidate's SHA-256 apart from the workers (nil: one of
	// its own).
	Hasher *snapshotcheck.Hasher
}

// NewReconciler is the reconciler with the settings given (the exported fields of
// settings; the rest of it is ignored) completed as every reconcile needs them: the
// member chart, defaults for what is unset, and empty memory. SetupWithManager calls it,
// and so do tests.
func NewReconciler(settings Reconciler) (*Reconciler, error) {
	rd, err := render.New()
	if err != nil {
		return nil, fmt.Errorf("load embedded member chart: %w", err)
	}
	r := settings
	r.renderer = rd
	r.cmSettle = newCMSettle()
	r.memory = newMemory()
	r.OperatorImage = operatorimage.Or(r.OperatorImage)
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.MinQuorumLossGrace <= 0 {
		r.MinQuorumLossGrace = DefaultMinQuorumLossGrace
	}
	if r.Hasher == nil {
		r.Hasher = &snapshotcheck.Hasher{}
	}
	if r.Workers <= 0 {
		r.Workers = DefaultWorkers
	}
	return &r, nil
}

// SetupWithManager watches EtcdClusters and the objects they own. Owned pods changing
// (a process dying, readiness flipping, a node going away) requeue their cluster at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	built, err := NewReconciler(*r)
	if err != nil {
		return err
	}
	*r = *built
	r.etcdLog = mgr.GetLogger().WithName("etcdcluster").WithName("etcd")
	b := ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdCluster{}, builder.WithPredicates(r.managedPredicate())). // shard.go
		Owns(&corev1.Pod{}, builder.WithPredicates(r.interruptOnMemberPodGone())).     // watch_membergone.go
		Owns(&corev1.Service{}).
		Owns(&corev1.PersistentVolumeClaim{}). // claims growing report progress
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Node{}, r.nodeCordonHandler(), builder.WithPredicates(cordonChanged)). // watch_cordon.go
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers})
	if err := r.watchCertificates(mgr, b); err != nil { // act_tls_certmanager.go
		return err
	}
	return b.Complete(r)
}

// Reconcile performs at most one membership step per call; each step is idempotent, so an
// operator restarted between any two calls resumes from what it observes.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	lg := log.FromContext(ctx)
	clock := startPhases() // metrics_phases.go
	defer clock.stop()
	var c etcdv1beta2.EtcdCluster
	if err := r.getCluster(ctx, req.NamespacedName, &c); err != nil { // memory_ownwrites.go
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName.String()) // memory.go
			r.cmSettle.forget(req.NamespacedName.String())
			forgetClusterMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.manages(&c) { // shard.go
		// Another instance manages it (CoreOS's scope annotation, or another shard):
		// nothing is touched, not even status. Events of its pods still arrive here
		// through the owner watch. A cluster that was this instance's until now (moved
		// to another shard) is released: its etcd clients closed, its metrics and all
		// kept of it dropped, so that nothing stale is acted on should it come back.
		r.release(req.NamespacedName)
		lg.V(1).Info("not managed by this instance", "scope", r.Scope, "shard", r.Shard.String())
		return ctrl.Result{}, nil
	}
	if r.movedAway(ctx, req.NamespacedName) { // shard.go
		// Moved to another shard since the copy just read (the cache lags): the
		// instance it joined writes its Services, budget, certificates and claims
		// from now on, and this one writes nothing, not even status.
		r.release(req.NamespacedName)
		lg.Info("moved to another instance: released", "shard", r.Shard.String())
		return ctrl.Result{}, nil
	}
	if !c.DeletionTimestamp.IsZero() {
		// Owner references let the garbage collector remove pods, services and PVCs.
		r.admins.forget(req.NamespacedName.String())
		return ctrl.Result{}, nil
	}
	status := r.statusWriterFor(&c)
	defer func() { clock.enter(phaseStatus); err = status.flush(ctx, err) }()

	// Input the API server's schema cannot judge (names, env clashing with flags, a
	// cluster domain stored before its pattern existed) is reported on the resource;
	// nothing is created, changed or dialled until it is fixed, paused or not: a paused
	// cluster is still observed, and its member names lead to the addresses dialled.
	c.Status.ControlPaused = c.Spec.Paused
	if err := render.ValidateCluster(&c); err != nil {
		return r.refuseSpec(&c, etcdv1beta2.ReasonInvalidSpec, strings.TrimPrefix(err.Error(), "render: "))
	}
	if c.Spec.Paused {
		r.observePaused(ctx, &c, status) // status_members.go: observing changes nothing
		return ctrl.Result{RequeueAfter: steadyResync}, nil
	}
	if err := r.checkClientServiceType(&c); err != nil {
		return r.refuseSpec(&c, etcdv1beta2.ReasonInvalidSpec, err.Error())
	}
	if err := r.checkPriorityClass(ctx, &c); err != nil {
		return r.refuseSpec(&c, etcdv1beta2.ReasonInvalidSpec, err.Error())
	}
	// Before the version check: a cluster CoreOS left on 3.2–3.4 is adopted read-only
	// whatever spec.version says while any of its pods runs such a version.
	if res, ok := r.adoptOldCoreOSCluster(ctx, &c); ok { // observe_oldversion.go: read-only
		return res, nil
	}
	if err := unsupportedVersion(&c); err != nil {
		return r.refuseSpec(&c, etcdv1beta2.ReasonUnsupportedVersion, err.Error())
	}

	budget, err := r.ensureServices(ctx, &c) // act_resources.go
	if err != nil {
		return r.observeFailed(ctx, &c, err)
	}
	// Built-in issuing points spec.TLS.static at its Secrets (act_builtintls.go); the
	// certificates in use are reported either way (status_certificates.go).
	tlsLooked := r.Now() // the cert-manager settle's wishes due by now are looked at here
	tlsDue, tlsErr := r.resolveBuiltinTLS(ctx, &c, status)
	if tlsErr == nil {
		tlsErr = r.resolveCertManagerTLS(ctx, &c, status) // act_tls_certmanager.go
	}
	r.reportCertificates(ctx, &c, tlsErr)
	if tlsBlocks(tlsErr) {
		return r.observeFailed(ctx, &c, tlsErr)
	}

	clock.enter(phaseObserve)
	obs, err := r.observe(ctx, &c, status)
	clock.enter(phasePlan)
	if errors.Is(err, errMemberPodGone) { // watch_membergone.go: not a failure
		// The pod event that interrupted it has queued the cluster again already.
		lg.V(1).Info("observation interrupted", "reason", err.Error())
		return ctrl.Result{}, nil
	}
	if err != nil {
		return r.observeFailed(ctx, &c, err)
	}
	r.backoff.succeed(clusterKey(&c), "observe")
	defer obs.close()
	obs.status = status
	status.scope = obs
	if err := r.ensureBudget(ctx, &c, obs, budget); err != nil { // act_resources.go
		return r.observeFailed(ctx, &c, err)
	}
	obs.claimReport = r.reconcileStorage(ctx, &c) // act_storage.go: claims grow beside the membership step
	r.pruneClaimBackups(ctx, &c)                  // act_upgradebackup_claim.go: only the newest snapshot's claim stays

	if _, warning := quorumLossGrace(&c, r.MinQuorumLossGrace); warning != "" {
		r.Recorder.Event(&c, corev1.EventTypeWarning, etcdv1beta2.EventReasonInvalidAnnotation, warning)
	}
	if _, warning := upgradeBackupMode(&c); warning != "" { // act_upgradebackup.go
		r.Recorder.Event(&c, corev1.EventTypeWarning, etcdv1beta2.EventReasonInvalidAnnotation, warning)
	}
	desired := desiredFromSpec(&c, r.MinQuorumLossGrace)
	desired.Maintenance = r.observeMaintenance(&c, obs)                     // act_maintenance.go
	obs.planner.TLSRefused = r.proveTLSRotation(ctx, &c, obs.pods, r.Now()) // observe_tlsrotation.go
	obs.tlsRefusal = planner.TLSRefusal(desired, obs.planner)
	obs.tlsProgress = planner.TLSProgress(desired, obs.planner)
	action := planner.Plan(desired, obs.planner)
	obs.noSpaceReason, obs.noSpaceMessage = noSpaceProgress(action)
	summary := planner.Summarize(desired, obs.planner, action)
	lg.V(1).Info("planned", "action", action.String(), "members", len(obs.planner.Members), "pods", len(obs.planner.Pods))

	// A step that failed is not retried before its back-off is over, however often
	// watch events wake the reconciler meanwhile.
	step := stepKey(action)
	if delay, backingOff := r.backoff.wait(clusterKey(&c), step, c.Generation, r.Now()); backingOff {
		lg.V(1).Info("step backing off", "action", action.String(), "retryIn", delay.String())
		obs.planned = &plannedStep{action: action, summary: summary, at: r.Now()} // reported by the deferred flush
		return wakeBy(ctrl.Result{RequeueAfter: delay}, tlsDue, r.Now()), nil
	}
	if r.movedAway(ctx, req.NamespacedName) { // shard.go
		// Moved to another shard while this reconcile observed: the instance it joined
		// acts from now on, and this one neither steps nor writes status.
		status.discard()
		r.release(req.NamespacedName)
		lg.Info("moved to another instance before acting: released", "action", action.String(), "shard", r.Shard.String())
		return ctrl.Result{}, nil
	}
	clock.enter(phaseAct)
	stepStart := time.Now()
	result, actErr := r.act(ctx, &c, obs, action)
	recordStep(action.Kind, stepStart)
	if hook := r.AfterAction; hook != nil && actErr == nil {
		hook(ctx, c.Namespace+"/"+c.Name, action)
	}
	now := r.Now()
	var stepErr error  // for the Reconciled condition
	var wait *etcdWait // act.go
	waited := errors.As(actErr, &wait) && r.backoff.waitOnEtcd(clusterKey(&c), step, c.Generation, now)
	if waited {
		lg.V(1).Info("step waits on etcd", "action", action.String(), "retryIn", etcdWaitRequeue.String(), "reason", wait.Error())
		result = ctrl.Result{RequeueAfter: etcdWaitRequeue}
	} else if actErr != nil {
		lg.Error(actErr, "action failed", "action", action.String())
		r.Recorder.Eventf(&c, corev1.EventTypeWarning, etcdv1beta2.ReasonActionFailed, "%s: %v", action.Kind, actErr)
		// Transient etcd errors are retried by etcdadmin already; a step that still
		// fails is retried after a delay that grows with each failure.
		result = ctrl.Result{RequeueAfter: r.backoff.fail(clusterKey(&c), step, c.Generation, now)}
		stepErr = fmt.Errorf("%s: %w", action.Kind, actErr)
	} else {
		r.backoff.succeed(clusterKey(&c), step)
	}
	result = r.reconcileAuth(ctx, &c, obs, action, result) // act_auth.go
	// Reported, and the step counted, by the deferred flush (updateStatus, status.go).
	obs.planned = &plannedStep{action: action, summary: summary, at: now,
		ran: true, actErr: actErr, stepErr: stepErr, waited: waited}
	result = wakeBy(r.cmSettle.requeue(clusterKey(&c), tlsLooked, now, result), tlsDue, now) // act_tls_certmanager.go
	return wakeBy(result, obs.warningsDue, now), nil                                         // observe_kubeletwarnings.go
}

// wakeBy requeues no later than due (zero: no such time): a built-in issuing step falls
// due then (a CA rotation's dwell ends, a certificate is to be renewed) and is taken on
// time rather than at the next periodic resync. A time already past is left to the
// events that will unblock its step (a roll-out's pods).
func wakeBy(result ctrl.Result, due, now time.Time) ctrl.Result {
	if due.IsZero() || !due.After(now) {
		return result
	}
	if d := due.Sub(now); result.RequeueAfter == 0 || d < result.RequeueAfter {
		result.RequeueAfter = d
	}
	return result
}

// desiredFromSpec translates the CR into the planner's terms.
func desiredFromSpec(c *etcdv1beta2.EtcdCluster, minGrace time.Duration) planner.Desired {
	grace, _ := quorumLossGrace(c, minGrace)
	upgradeBackup, _ := upgradeBackupMode(c)
	return planner.Desired{
		ClusterName:        c.Name,
		Size:               c.Spec.Size,
		DataOnClaims:       c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil, // hibernation needs it
		Version:            render.ClusterVersion(c.Spec),
		Image:              render.Image(c.Spec, render.ClusterVersion(c.Spec)),
		Paused:             c.Spec.Paused,
		QuorumLossRecovery: c.Annotations[AnnotationForceNewCluster] == "true",
		RestoreFromBackup:  restoreFromBackupAllowed(c),
		QuorumLossGrace:    grace,
		PeerTLS:            render.PeerTLS(c),
		ClientTLS:          render.ClientTLS(c),
		UpgradeBackup:      upgradeBackup,
	}
}

// quorumLossGrace reads AnnotationQuorumLossGrace: the grace to give the planner (0: its
// default) and, when the annotation is not used as written, a warning saying why. A value
// time.Duration cannot hold ("100000000h") does not parse, so it can never wrap around to
// a short grace; a grace below minGrace is raised to it.
func quorumLossGrace(c *etcdv1beta2.EtcdCluster, minGrace time.Duration) (time.Duration, string) {
	v, ok := c.Annotations[AnnotationQuorumLossGrace]
	if !ok {
		return 0, ""
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Sprintf("%s=%q is not a positive duration; using the default %s",
			AnnotationQuorumLossGrace, v, planner.DefaultQuorumLossGrace)
	}
	if d < minGrace {
		return minGrace, fmt.Sprintf("%s=%q is below the minimum %s, which keeps a brief outage from counting as a lost quorum; using %s",
			AnnotationQuorumLossGrace, v, minGrace, minGrace)
	}
	return d, ""
}

// AnnotationQuorumLossGrace overrides how long a quorum must stay lost before the cluster
// is reported Failed (or, with AnnotationForceNewCluster, recovered), as a Go duration
// ("90s"). Default planner.DefaultQuorumLossGrace (5m): elections and rolling restarts
// lose quorum for seconds and must never be mistaken for a lasting loss.
const AnnotationQuorumLossGrace = "etcd.database.coreos.com/quorum-loss-grace"

// DefaultMinQuorumLossGrace is the shortest AnnotationQuorumLossGrace honoured. A shorter
// grace would let an ordinary blip count as a lasting loss and, with
// AnnotationForceNewCluster, fork the cluster from one member while the others may still
// hold newer writes: etcd elects a leader and restarts a member in seconds, and
// Kubernetes itself waits 40-50 s of missed heartbeats before it calls a node unreachable.
// A minute is longer than all of these.
const DefaultMinQuorumLossGrace = time.Minute

// AnnotationForceNewCluster opts a cluster into automatic recovery from a lasting quorum
// loss (force-new-cluster from the surviving member with the highest revision). Without
// it a lost quorum is only reported: nothing is destroyed.
const AnnotationForceNewCluster = "etcd.database.coreos.com/allow-force-new-cluster"

func conditionTrue(c *etcdv1beta2.EtcdCluster, t etcdv1beta2.ClusterConditionType) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// tlsBlocks: the TLS error stops the reconcile before anything is observed. Not when
// waiting on cert-manager (go on as things are), nor for a lost CA whose generation the
// members still mount (go on with it, act_builtintls.go), nor for a refused move of
// running members to cert-manager's CA (act_tls_certmanager.go): that refusal is
// reported (CertificatesValid=False, TLSChangeRefused) and the planner, which refuses to
// restart members onto other TLS, carries on with what they run, as it does for any TLS
// change it refuses; a cluster frozen by it would not even replace a dead member.
func tlsBlocks(err error) bool {
	if err == nil || tlsPending(err) {
		return false
	}
	if lost, ok := errors.AsType[*caLostError](err); ok && lost.generation > 0 {
		return false
	}
	var be *builtinTLSError
	return !errors.As(err, &be) || be.reason != etcdv1beta2.ReasonTLSChangeRefused
}
