package etcdcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/apart"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The backups of a lost cluster live behind an endpoint and credentials its tenant
// chose, and the controller's four workers serve every namespace: a slow or silent S3
// endpoint must not hold them. So the listing runs apart from the workers (a reconcile
// starts it and uses its result at a later reconcile), at most maxNamespaceListings per
// namespace and maxBackgroundListings in all at a time, with a deadline, and at most once per
// backupListInterval per cluster while it is lost (the result is kept in memory).
// Choosing, which downloads candidates, has a budget of its own and, once it failed, is
// not tried again for backupChooseRetry.
const (
	backupListTimeout     = 20 * time.Second
	backupListInterval    = time.Minute
	backupChooseBudget    = 3 * time.Minute
	backupChooseRetry     = 5 * time.Minute
	maxProblemsReported   = 5
	maxBackgroundListings = 4
	maxNamespaceListings  = 2
)

// listingPending is said, in the backup problems, of a cluster whose listing has not
// finished yet (or waits for another cluster's in its namespace).
const listingPending = "the backups are being listed apart from the reconcile workers (two listings per namespace at a time); the result is used at the next check"

// lostBackups is what the controller found for a lost cluster.
type lostBackups struct {
	at   time.Time
	only string // the EtcdBackup the opt-in named when listed ("" for any)
	// objs are the candidates in the order they are tried; newest the first of them
	// that is provably this EtcdBackup's own (its metadata read).
	objs     []backupObject
	newest   *planner.BackupCandidate
	problems []string
}

// lostBackupCache keeps, per cluster (namespace/name/UID), the last listing and the last
// failed choice. Memory only: a restarted operator lists again, which is harmless.
type lostBackupCache struct {
	// listTimeout and chooseBudget replace backupListTimeout and backupChooseBudget
	// when set (tests).
	listTimeout, chooseBudget time.Duration
	// awaitListings makes listLostBackups wait for the listing it started, for tests
	// that read the result of one observation.
	awaitListings bool

	// listings run apart from the workers (internal/apart): at most
	// maxNamespaceListings per namespace and maxBackgroundListings in all; the clusters
	// whose namespace was busy wait, the one waiting longest going next. Its results are
	// the latest listings by cluster key.
	listings apart.Queue[*etcdv1beta2.EtcdCluster, lostBackups]

	// owners read the candidates' metadata apart from the workers during a choice
	// (act_totalloss_owners.go); owned is what they read, per cluster key and object.
	owners apart.Queue[[]backupObject, ownerReads]

	mu       sync.Mutex
	failures map[string]chooseFailure
	owned    map[string]map[string]ownership
	// checks are the candidates' finished snapshot checks (act_totalloss_check.go).
	checks backupChecks
}

func (l *lostBackupCache) queue() *apart.Queue[*etcdv1beta2.EtcdCluster, lostBackups] {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listings.PerNamespace == 0 {
		l.listings.PerNamespace, l.listings.Total, l.listings.MaxIdle = maxNamespaceListings, maxBackgroundListings, 2*backupListInterval
	}
	return &l.listings
}

// begin returns the channel closed when key's listing ends: the running one's, or a new
// one's when start is true (the caller runs it, then the namespace's waiters, see next).
// nil: the namespace has maxNamespaceListings running; c waits for its turn. key is
// namespace/name/UID.
func (l *lostBackupCache) begin(key string, c *etcdv1beta2.EtcdCluster, now time.Time) (done chan struct{}, start bool) {
	return l.queue().Begin(key, c, now)
}

// finish records key's listing, unless the cluster was forgotten meanwhile (deleted, or
// no longer lost), and hands the goroutine the namespace's longest-waiting cluster
// (marked started; ok false when none waits, and the goroutine ends), in one step so no
// other listing slips in between. A waiter that has not asked for two intervals is
// dropped (no longer lost, paused, deleted).
func (l *lostBackupCache) finish(key string, done chan struct{}, found lostBackups, now time.Time) (nextKey string, c *etcdv1beta2.EtcdCluster, next chan struct{}, ok bool) {
	return l.queue().Finish(key, done, found, now)
}

// last is key's latest listing, however old.
func (l *lostBackupCache) last(key, only string) (lostBackups, bool) {
	found, _, ok := l.queue().Result(key)
	return found, ok && found.only == only
}

type chooseFailure struct {
	at  time.Time
	err error
}

func (l *lostBackupCache) get(key, only string, now time.Time) (lostBackups, bool) {
	found, _, ok := l.queue().Result(key)
	if !ok || found.only != only || now.Sub(found.at) >= backupListInterval || now.Before(found.at) {
		return lostBackups{}, false
	}
	return found, true
}

func (l *lostBackupCache) put(key string, found lostBackups) {
	l.queue().Put(key, found, found.at)
}

// failedRecently is the last choice's error if it failed less than backupChooseRetry ago.
func (l *lostBackupCache) failedRecently(key string, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.failures[key]
	if !ok || now.Sub(f.at) >= backupChooseRetry || now.Before(f.at) {
		return nil
	}
	return fmt.Errorf("%w (not tried again before %s)", f.err, f.at.Add(backupChooseRetry).UTC().Format(time.RFC3339))
}

func (l *lostBackupCache) chose(key string, now time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failures == nil {
		l.failures = map[string]chooseFailure{}
	}
	if err == nil {
		delete(l.failures, key)
		return
	}
	l.failures[key] = chooseFailure{at: now, err: err}
}

// forget drops what was kept of a cluster that is no longer lost.
func (l *lostBackupCache) forget(key string) {
	l.queue().Forget(key) // a listing still running keeps its result to itself
	l.forgetOwners(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, key)
	l.checks.forget(key)
}

// listLostBackups returns the candidates of a lost cluster, listed at most once per
// backupListInterval and within backupListTimeout; a listing cut short says so in its
// problems. A listing not yet done is started apart from the worker, and meanwhile the
// previous one (if any) is returned with listingPending among its problems.
func (r *Reconciler) listLostBackups(ctx context.Context, c *etcdv1beta2.EtcdCluster, now time.Time) lostBackups {
	key, only := clusterKey(c)+"/"+string(c.UID), restoreFromBackupName(c)
	if found, ok := r.lostBackups.get(key, only, now); ok {
		return found
	}
	// The listing has its own deadline (listNow); the goroutine then lists for the
	// namespace's waiters, one by one.
	done := r.lostBackups.queue().Ask(ctx, key, c.DeepCopy(), apart.Job[*etcdv1beta2.EtcdCluster, lostBackups]{
		Work: func(ctx context.Context, _ string, c *etcdv1beta2.EtcdCluster) lostBackups {
			return r.listNow(ctx, c, r.Now())
		},
		// A panic (a tenant's endpoint, parsing its answers) becomes the listing's problem.
		Panicked: func(_ string, c *etcdv1beta2.EtcdCluster) lostBackups {
			return lostBackups{at: r.Now(), only: restoreFromBackupName(c), problems: []string{"listing the backups failed (an internal error, logged by the operator)"}}
		},
		Now: r.Now,
	})
	if done != nil && r.lostBackups.awaitListings {
		<-done
		if found, ok := r.lostBackups.last(key, only); ok {
			return found
		}
	}
	found, _ := r.lostBackups.last(key, only)
	found.problems = append(append([]string(nil), found.problems...), listingPending)
	return found
}

// listNow lists a lost cluster's candidates within backupListTimeout.
func (r *Reconciler) listNow(ctx context.Context, c *etcdv1beta2.EtcdCluster, now time.Time) lostBackups {
	only := restoreFromBackupName(c)
	limit := cmp.Or(r.lostBackups.listTimeout, backupListTimeout)
	lctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	objs, problems := r.backupObjects(lctx, c)
	found := lostBackups{at: now, only: only, objs: objs, problems: problems}
	for _, b := range objs {
		_, ok, err := backupselect.DescribeOwn(lctx, b.src, b.key)
		if err != nil {
			found.problems = append(found.problems, fmt.Sprintf("s3://%s: %v", b.path, err))
			break // the store fails: the next object would fail alike
		}
		if ok {
			found.newest = &planner.BackupCandidate{Backup: b.backup.Name, Path: b.path, Revision: b.revision}
			break
		}
	}
	if lctx.Err() != nil {
		found.problems = append(found.problems, fmt.Sprintf("listing the backups took longer than %s; tried again in %s", limit, backupListInterval))
	}
	found.problems = capProblems(found.problems)
	return found
}

// capProblems keeps status messages short: a namespace may hold many EtcdBackups.
func capProblems(problems []string) []string {
	if len(problems) <= maxProblemsReported {
		return problems
	}
	return append(problems[:maxProblemsReported:maxProblemsReported], fmt.Sprintf("and %d more", len(problems)-maxProblemsReported))
}

// chooseBackup verifies the candidates in order, as the restore step will (stored
// SHA-256, etcd's integrity hash, a readable database), each in a snapshot check pod
// (checkCandidate; a *backupCheckPending while one runs), and returns the record of the
// first that passes, pinned to the SHA-256 the operator read itself. It stops at the first that passes
// and after backupChooseBudget; a failed choice is not tried again for
// backupChooseRetry (the error says until when).
func (r *Reconciler) chooseBackup(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*etcdv1beta2.BackupRestoreStatus, error) {
	key, now := clusterKey(c)+"/"+string(c.UID), r.Now()
	if err := r.lostBackups.failedRecently(key, now); err != nil {
		return nil, err
	}
	chosen, err := r.chooseWithin(ctx, c, now)
	if _, pending := errors.AsType[*backupCheckPending](err); !pending {
		r.lostBackups.chose(key, now, err)
		if err != nil {
			// The next choice reads and checks every candidate again.
			r.lostBackups.checks.forget(key)
			r.lostBackups.forgetOwners(key)
		}
	}
	return chosen, err
}

func (r *Reconciler) chooseWithin(ctx context.Context, c *etcdv1beta2.EtcdCluster, now time.Time) (*etcdv1beta2.BackupRestoreStatus, error) {
	found := r.listLostBackups(ctx, c, now)
	problems := append([]string(nil), found.problems...)
	budget := cmp.Or(r.lostBackups.chooseBudget, backupChooseBudget)
	cluster := clusterKey(c) + "/" + string(c.UID)
	for i, b := range found.objs {
		// Whose object it is: read apart from the workers (act_totalloss_owners.go).
		own, read := r.lostBackups.ownerOf(cluster, b)
		if !read {
			if err := r.readOwners(ctx, cluster, found.objs[i:]); err != nil {
				return nil, err // *backupCheckPending
			}
			if own, read = r.lostBackups.ownerOf(cluster, b); !read {
				problems = append(problems, fmt.Sprintf("checking the backups took longer than %s (%d of %d checked)", budget, i, len(found.objs)))
				break
			}
		}
		if own.err != nil || !own.own {
			if own.err != nil {
				problems = append(problems, fmt.Sprintf("s3://%s: %v", b.path, own.err))
			}
			continue // another EtcdBackup's object, unfinished, or gone: never restored from
		}
		sha, revision, err := r.checkCandidate(ctx, c, b) // act_totalloss_check.go: in a pod
		if _, pending := errors.AsType[*backupCheckPending](err); pending {
			return nil, err
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("s3://%s: %v", b.path, err))
			log.FromContext(ctx).Info("backup not restorable; trying an older one", "backup", b.backup.Name, "path", b.path, "error", err.Error())
			continue
		}
		return &etcdv1beta2.BackupRestoreStatus{
			Backup: b.backup.Name, BackupUID: string(b.backup.UID), Path: b.path, SHA256: sha, Revision: revision,
		}, nil
	}
	if len(problems) == 0 {
		problems = []string{"no backup object found"}
	}
	return nil, errors.New("no restorable backup: " + strings.Join(capProblems(problems), "; "))
}

// restoreStepProgress reads a restore member's restore step (its init container): whether
// it has run or runs now, and when it finished successfully (zero: not yet).
func restoreStepProgress(p *corev1.Pod) (started bool, doneAt time.Time) {
	if p == nil {
		return false, time.Time{}
	}
	for _, st := range p.Status.InitContainerStatuses {
		if st.Name != render.RestoreContainerName {
			continue
		}
		started = st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil || st.RestartCount > 0
		if t := st.State.Terminated; t != nil && t.ExitCode == 0 {
			doneAt = t.FinishedAt.Time
			if doneAt.IsZero() {
				doneAt = t.StartedAt.Time
			}
		}
	}
	return started, doneAt
}
