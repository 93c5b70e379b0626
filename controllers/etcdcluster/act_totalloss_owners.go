package etcdcluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/apart"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
)

// Choosing a lost cluster's backup reads each candidate's metadata (whether its own
// EtcdBackup wrote it: backupselect.DescribeOwn) at the tenant's endpoint. Those reads
// run apart from the reconcile workers, on the same kind of queue as the listings
// (internal/apart: two per namespace, four in all): a choice that meets a candidate not
// yet read starts a job that reads it and the ones after it, in order, until one is the
// cluster's own, within backupChooseBudget in all; the choice returns a pending step
// meanwhile and goes on with the job's result at a later reconcile. A job is keyed by
// the cluster (namespace/name/UID) and a hash of the objects it reads (their EtcdBackups'
// UIDs and paths), so its result is never used for another cluster or another listing.
// What was read is kept with the candidates' checks (dropped when the cluster is no
// longer lost, deleted, or its choice failed).

// ownerReadPending is what a choice waiting for the metadata reads says.
const ownerReadPending = "reading the metadata of backup %s (and those after it) apart from the reconcile workers (two reads per namespace at a time, each job within %s)"

// ownerPoll is how soon a choice looks again for the reads running apart.
const ownerPoll = 2 * time.Second

// ownership is one candidate's metadata read: whether its own EtcdBackup wrote it, or
// why the read failed.
type ownership struct {
	own bool
	err error
}

// ownerReads is a job's result: the objects read, by ownerKey, and whether the job ran
// out of backupChooseBudget before reading them all (the remaining are unread).
type ownerReads struct {
	read     map[string]ownership
	timedOut bool
}

// ownerKey names object b among a cluster's candidates.
func ownerKey(b backupObject) string { return string(b.backup.UID) + "/" + b.path }

// ownerJobKey names the job reading objs for the cluster key (namespace/name/UID).
func ownerJobKey(cluster string, objs []backupObject) string {
	h := sha256.New()
	for _, b := range objs {
		fmt.Fprintf(h, "%s\n", ownerKey(b))
	}
	return fmt.Sprintf("%s/owners/%x", cluster, h.Sum(nil))
}

func (l *lostBackupCache) ownerQueue() *apart.Queue[[]backupObject, ownerReads] {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owners.PerNamespace == 0 {
		l.owners.PerNamespace, l.owners.Total, l.owners.MaxIdle = maxNamespaceListings, maxBackgroundListings, backupChooseBudget+time.Minute
	}
	return &l.owners
}

// ownerOf is what was read of b for cluster, if it was.
func (l *lostBackupCache) ownerOf(cluster string, b backupObject) (ownership, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.owned[cluster][ownerKey(b)]
	return o, ok
}

func (l *lostBackupCache) putOwners(cluster string, read map[string]ownership) {
	l.mu.Lock()
	defer l.mu.Unlock()
	owned := innerMap(&l.owned, cluster) // act_totalloss_check.go
	for k, o := range read {
		owned[k] = o
	}
}

// forgetOwners drops what was read for cluster (namespace/name/UID) and its jobs'
// results; a job still running keeps its result to itself.
func (l *lostBackupCache) forgetOwners(cluster string) {
	l.ownerQueue().ForgetIf(func(k string) bool { return strings.HasPrefix(k, cluster+"/") })
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.owned, cluster)
}

// readOwners reads, apart from the caller, the metadata of objs (a lost cluster's
// candidates from the first not yet read) until one is the cluster's own: nil once the
// reads are recorded (ownerOf), a *backupCheckPending while they run, an error when the
// job ran out of its budget before reading objs[0].
func (r *Reconciler) readOwners(ctx context.Context, cluster string, objs []backupObject) error {
	q, id := r.lostBackups.ownerQueue(), ownerJobKey(cluster, objs)
	budget := cmp.Or(r.lostBackups.chooseBudget, backupChooseBudget)
	take := func() bool {
		res, _, ok := q.Result(id)
		if ok {
			q.Forget(id)
			r.lostBackups.putOwners(cluster, res.read)
		}
		return ok
	}
	if take() {
		return nil
	}
	done := q.Ask(ctx, id, objs, apart.Job[[]backupObject, ownerReads]{
		Work: func(ctx context.Context, _ string, objs []backupObject) ownerReads {
			cctx, cancel := context.WithTimeout(ctx, budget)
			defer cancel()
			res := ownerReads{read: map[string]ownership{}}
			for _, b := range objs {
				if cctx.Err() != nil {
					res.timedOut = true
					break
				}
				_, ok, err := backupselect.DescribeOwn(cctx, b.src, b.key)
				if err != nil && cctx.Err() != nil {
					res.timedOut = true
					break
				}
				res.read[ownerKey(b)] = ownership{own: ok, err: err}
				if ok {
					break
				}
			}
			return res
		},
		Panicked: func(string, []backupObject) ownerReads {
			return ownerReads{read: map[string]ownership{ownerKey(objs[0]): {err: fmt.Errorf("reading its metadata failed (an internal error, logged by the operator)")}}}
		},
		Now: r.Now,
	})
	if done != nil && r.lostBackups.awaitListings {
		<-done
		if take() {
			return nil
		}
	}
	return &backupCheckPending{msg: fmt.Sprintf(ownerReadPending, "s3://"+objs[0].path, budget), after: ownerPoll}
}
