package etcdcluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// observation is one reconcile's scope: its view of a cluster (its pods from the API and
// its members from etcd, joined, plus an etcd admin client for acting on it) and what the
// reconcile's phases find for status. It lives for one reconcile; what is kept across
// reconciles is the Reconciler's memory (memory.go).
type observation struct {
	// status writes the cluster's status; act checkpoints it before a step whose effect
	// must survive a restart.
	status    *statusWriter
	planner   planner.Observed
	clusterID uint64                 // from the leader's (else any member's) status; 0 if none answered
	pods      map[string]*corev1.Pod // by name
	// warnings are the kubelet's set-up warnings of the pods it is still setting up;
	// warningsDue is when a pod not yet looked at for them is due to be (zero: none).
	warnings    map[string]*kubeletWarning
	warningsDue time.Time
	members     []etcdadmin.Member // nil when no endpoint answered
	// statuses are each dialled endpoint's status answer, failed ones included.
	statuses []etcdadmin.EndpointStatus
	// admin is the cluster's client, kept across reconciles (memory_admins.go); nil when no
	// pod has an IP yet.
	admin    *etcdadmin.Admin
	leaderEP string           // client endpoint of the leader, if known
	space    spaceObservation // database sizes and alarms
	// scheduleSlot is the defragmentation schedule's slot due now (zero if none);
	// noSpaceReason and noSpaceMessage the NOSPACE remediation's progress (act_maintenance.go).
	scheduleSlot                  time.Time
	noSpaceReason, noSpaceMessage string

	// For the SpecApplied condition (status_specapplied.go): the storage step's findings
	// (act_storage.go; nil: not judged), a refused TLS change and the step of turning TLS
	// on that runs (planner.TLSRefusal, planner.TLSProgress; "" when none).
	claimReport *storageReport
	tlsRefusal  string
	tlsProgress string
	// upgradeBackup is the one-shot backup before the minor step to the spec's version,
	// when it exists and is this cluster's (act_upgradebackup.go).
	upgradeBackup *etcdv1beta2.EtcdBackup
	// planned is what the reconcile planned and did, once it planned (nil before).
	planned *plannedStep
	// auth is the cluster's etcd authentication as observed (act_auth.go).
	auth authObservation
}

// plannedStep is the step a reconcile planned and what became of it, for updateStatus.
type plannedStep struct {
	action  planner.Action
	summary planner.Summary
	at      time.Time // when the step was judged: skipped for its back-off, or done
	// ran: the step was tried (false: it still backs off after a failure); actErr is
	// what it returned, stepErr the failure the Reconciled condition reports (nil when it
	// succeeded or waits on etcd, waited).
	ran             bool
	actErr, stepErr error
	waited          bool
}

// close ends the observation. The admin client is not closed: the cache keeps it for
// the next reconcile, and closes it when the cluster goes.
func (o *observation) close() {}

// observe reads the cluster as it is: what status recorded, the member pods and claims
// from the API server (observe_kube.go), the members from etcd (observe_etcd.go), and
// joins them into the planner's view (observe_join.go). A member counted Ready whose pod
// went is reported through status before etcd is asked (status_membergone.go), and a
// member pod deleted while etcd is being asked ends the observation with errMemberPodGone
// (watch_membergone.go).
func (r *Reconciler) observe(ctx context.Context, c *etcdv1beta2.EtcdCluster, status *statusWriter) (*observation, error) {
	now := r.Now()
	o := &observation{planner: recordedState(c, now)}
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := r.freshenMarkedPod(ctx, c, pods); err != nil { // act_marker.go
		return nil, err
	}
	if err := r.observeClaims(ctx, c, &o.planner); err != nil {
		return nil, err
	}
	o.pods = ownPods(c, pods)
	endpoints, epOfPod := r.dialTargets(c, o.pods, r.recoveryUnderway(c, pods))
	o.warnings, o.warningsDue = r.kubeletWarnings(ctx, clusterKey(c), o.pods)

	r.reportGoneMembers(ctx, c, o.pods, status)

	var answers etcdAnswers
	o.auth = r.observeAuth(ctx, c) // act_auth.go
	if len(endpoints) > 0 {
		ectx, done := r.inflight.begin(ctx, clusterKey(c))
		admin, err := r.connect(ectx, c, endpoints, &o.auth)
		if err == nil {
			err = o.auth.blocking() // act_auth.go
		}
		if err == nil {
			o.admin = admin
			answers = askEtcd(ectx, admin, endpoints, probeBounds(admin, c.Status.Bootstrapped, o.pods, epOfPod)) // observe_probe.go
		}
		if done() {
			return nil, errMemberPodGone
		}
		if err != nil {
			return nil, err
		}
	}

	nodes := nodeCache{} // each Node is read once per observation (observe_cordon.go)
	j := joiner{
		health:       r.health,
		key:          types.NamespacedName{Namespace: c.Namespace, Name: c.Name}.String(),
		now:          now,
		nodeReady:    func(node string) bool { return r.node(ctx, node, nodes).ready },
		nodeCordoned: func(node string) bool { return r.node(ctx, node, nodes).cordoned },
		drift:        func(p *corev1.Pod) planner.Drift { return podDrift(c, r.ClusterDomain, p) },
		marker:       func(p *corev1.Pod) string { return r.verifiedMarker(c, p) },
	}
	j.join(o, answers, epOfPod)
	o.statuses = answers.statuses
	observeDowngrade(o) // act_downgrade.go
	if o.planner.NoNodeToLeaveTo, err = r.noNodeToLeaveTo(ctx, c, o); err != nil {
		o.close()
		return nil, err
	}
	o.space = answers.space
	if err := r.observeTotalLoss(ctx, c, o); err != nil { // observe_totalloss.go
		o.close()
		return nil, err
	}
	// act_upgradebackup.go. Failing to read the backups holds only a minor step.
	if ub, eb, err := r.observeUpgradeBackup(ctx, c, o.planner); err != nil {
		o.planner.UpgradeBackup = &planner.UpgradeBackup{Target: "?", Name: upgradeBackupName(c, render.ClusterVersion(c.Spec)),
			State: planner.UpgradeBackupFailed, Message: err.Error()}
	} else {
		o.planner.UpgradeBackup, o.upgradeBackup = ub, eb
	}
	return o, nil
}

// recordedState is the planner's view of what status recorded: whether the cluster ever
// formed, its initial members, the learner in flight and the recovery underway.
func recordedState(c *etcdv1beta2.EtcdCluster, now time.Time) planner.Observed {
	obs := planner.Observed{
		Now:              now,
		Bootstrapped:     c.Status.Bootstrapped,
		BootstrapMembers: c.Status.BootstrapMembers,
		NameSeed:         string(c.UID),
		VersionSince:     versionSinceRecorded(&c.Status), // status_versionsince.go
	}
	if p := c.Status.PendingMember; p != nil {
		if id, err := etcdadmin.ParseID(p.ID); err == nil {
			obs.Pending = &planner.PendingMember{Name: p.Name, ID: id, AddedAt: p.AddedAt.Time}
		}
	}
	if rec := c.Status.Recovery; rec != nil {
		id, _ := etcdadmin.ParseID(rec.SourceID)
		obs.Recovery = &planner.Recovery{Source: rec.Source, SourceID: id, Revision: rec.Revision,
			Member: rec.Member, StartedAt: rec.StartedAt.Time, Token: rec.Token}
		obs.Pending = nil
	}
	if rec := c.Status.BackupRestore; rec.InProgress() {
		obs.BackupRestore = &planner.BackupRestore{Backup: rec.Backup, Path: rec.Path, Revision: rec.Revision,
			Member: rec.Member, StartedAt: rec.StartedAt.Time, Token: rec.Token}
		obs.Pending = nil
	}
	return obs
}
