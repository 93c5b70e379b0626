package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// lostObservation observes total loss of the fixture's cluster at now.
func lostObservation(t *testing.T, f *proofFixture, now time.Time) *observation {
	t.Helper()
	o := f.observed(t)
	o.planner = planner.Observed{Now: now, Bootstrapped: true}
	if err := f.r.observeTotalLoss(context.Background(), f.cluster, o); err != nil {
		t.Fatal(err)
	}
	return o
}

// The cluster controller opens a backup's store with what the operator lends
// (--allow-ambient-s3-credentials), and a refusal, like any per-EtcdBackup problem,
// reaches the planner, which says it in the AllMembersLost condition.
func TestTotalLossBackupProblemsAndAmbientCredentials(t *testing.T) {
	ambient := s3Backup("amb", "c", lossBucket+"/c/per", "http://127.0.0.1:1")
	ambient.Spec.S3.AWSSecret, ambient.Spec.S3.CredentialsSource = "", etcdv1beta2.S3CredentialsEnvironment
	for _, allow := range []bool{false, true} {
		f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) { c.Status.Bootstrapped = true }, ambient.DeepCopy())
		f.r.S3Access = backupstorage.S3Access{AllowAmbient: allow, AllowEndpoints: testS3Access.AllowEndpoints}
		f.r.lostBackups.listTimeout = 2 * time.Second
		o := lostObservation(t, f, proofNow)
		problems := strings.Join(o.planner.BackupProblems, "; ")
		refused := strings.Contains(problems, "does not lend")
		if !strings.HasPrefix(problems, "EtcdBackup amb: ") || refused == allow {
			t.Errorf("allow ambient %v: problems %q", allow, problems)
		}
		a := planner.Plan(desiredFromSpec(f.cluster, time.Minute), o.planner)
		if a.Reason != etcdv1beta2.ReasonAllMembersLost || !strings.Contains(a.Message, "passed over: EtcdBackup amb: ") {
			t.Errorf("allow ambient %v: plan %v %q does not say why the backup is not used", allow, a.Kind, a.Message)
		}
	}
}

// A hanging S3 endpoint holds a worker only for the listing's deadline, the listing is
// repeated at most once per interval while the cluster stays lost (the result is kept),
// and the timeout is reported.
func TestTotalLossListingHasADeadlineAndIsKept(t *testing.T) {
	f, listings := hangingListingFixture(t)
	f.r.lostBackups.listTimeout = 500 * time.Millisecond

	start := time.Now()
	o := lostObservation(t, f, proofNow)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("observing took %s against a hanging endpoint", took)
	}
	problems := strings.Join(o.planner.BackupProblems, "; ")
	if !strings.Contains(problems, "listing the backups took longer than 500ms") {
		t.Errorf("problems %q do not report the timeout", problems)
	}
	first := listings()
	if first == 0 {
		t.Fatal("the endpoint was never dialled")
	}

	again := lostObservation(t, f, proofNow.Add(30*time.Second))
	if n := listings(); n != first || strings.Join(again.planner.BackupProblems, "; ") != problems {
		t.Errorf("second observation within the minute: %d connections (was %d), problems %q: listed again", n, first, again.planner.BackupProblems)
	}
	lostObservation(t, f, proofNow.Add(backupListInterval+time.Second))
	if n := listings(); n == first {
		t.Errorf("observation a minute later made no new connection: not listed again")
	}
}

// A recorded restore is neither timed as a loss nor looked for backups for: what its
// member's restore step did is read instead, for the planner's time bounds.
func TestRecordedRestoreReadsItsRestoreStep(t *testing.T) {
	done := metav1.NewTime(proofNow.Add(-time.Minute))
	for name, tc := range map[string]struct {
		st      *corev1.ContainerStatus
		started bool
		doneAt  time.Time
	}{
		"no pod":  {},
		"waiting": {st: &corev1.ContainerStatus{Name: render.RestoreContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}},
		"running": {st: &corev1.ContainerStatus{Name: render.RestoreContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, started: true},
		"failed once, waiting again": {st: &corev1.ContainerStatus{Name: render.RestoreContainerName, RestartCount: 1,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}, started: true},
		"done": {st: &corev1.ContainerStatus{Name: render.RestoreContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: done}}}, started: true, doneAt: done.Time},
	} {
		t.Run(name, func(t *testing.T) {
			f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) { c.Status.Bootstrapped = true })
			f.cluster.Status.BackupRestore = &etcdv1beta2.BackupRestoreStatus{Backup: "b", Member: "c-n", Token: "tok", StartedAt: metav1.NewTime(proofNow)}
			o := f.observed(t)
			o.planner = recordedState(f.cluster, proofNow)
			if tc.st != nil {
				p := ownedMemberPod("c-n", "uid-c")
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{*tc.st}
				o.pods["c-n"] = p
			}
			if err := f.r.observeTotalLoss(context.Background(), f.cluster, o); err != nil {
				t.Fatal(err)
			}
			r := o.planner.BackupRestore
			if r.StepStarted != tc.started || !r.StepDoneAt.Equal(tc.doneAt) || !o.planner.AllLostSince.IsZero() || o.planner.Backup != nil {
				t.Errorf("restore %+v, loss since %v, backup %+v", r, o.planner.AllLostSince, o.planner.Backup)
			}
		})
	}
}

// A lost cluster's listing against a hanging endpoint does not hold the worker: the
// observation returns at once saying the listing runs apart, and a later observation
// has its result (here the timeout).
func TestTotalLossListingLeavesTheWorker(t *testing.T) {
	f, listings := hangingListingFixture(t)
	f.r.lostBackups.listTimeout = 2 * time.Second
	f.r.lostBackups.awaitListings = false // as in production

	observe := func() []string {
		o := f.observed(t)
		o.planner = planner.Observed{Now: proofNow, Bootstrapped: true}
		if err := f.r.observeTotalLoss(context.Background(), f.cluster, o); err != nil {
			t.Fatal(err)
		}
		return o.planner.BackupProblems
	}
	// Returned while the listing still hangs: it says so, not the listing's timeout.
	if got := strings.Join(observe(), "; "); got != listingPending {
		t.Fatalf("first observation's problems %q, want only %q", got, listingPending)
	}
	poll.Eventually(t, 10*time.Second, 20*time.Millisecond, "the endpoint dialled", func() error {
		if listings() == 0 {
			return errors.New("no connection yet")
		}
		return nil
	})
	poll.Eventually(t, 10*time.Second, 50*time.Millisecond, "the listing's result", func() error {
		if got := strings.Join(observe(), "; "); !strings.Contains(got, "listing the backups took longer than 2s") {
			return fmt.Errorf("problems %q", got)
		}
		return nil
	})
}

// Two listings per namespace at a time, then the namespace's waiting clusters, the one
// waiting longest first: a tenant's many lost clusters queue behind each other, not
// beside every other tenant's, and each gets its turn.
func TestBackgroundListingsOnePerNamespace(t *testing.T) {
	var l lostBackupCache
	now := proofNow
	cl := teamACluster
	a1, start := l.begin("team-a/c1/u1", cl("c1"), now)
	if a1 == nil || !start {
		t.Fatal("the first listing of team-a did not start")
	}
	if again, start := l.begin("team-a/c1/u1", cl("c1"), now); again != a1 || start {
		t.Error("the same cluster's listing started twice")
	}
	b1, start := l.begin("team-a/c0/u0", cl("c0"), now)
	if b1 == nil || !start {
		t.Fatal("team-a's second listing did not start beside its first")
	}
	if d, _ := l.begin("team-a/c3/u3", cl("c3"), now.Add(2*time.Second)); d != nil {
		t.Error("a third listing in team-a started beside the first two")
	}
	if d, _ := l.begin("team-a/c2/u2", cl("c2"), now.Add(time.Second)); d != nil {
		t.Error("a fourth listing in team-a started beside the first two")
	}
	if d, start := l.begin("team-b/c1/u9", cl("c1"), now); d == nil || !start {
		t.Error("team-b's listing waited for team-a's")
	}
	// c1's goroutine finishes and takes c2 (waiting since +1s), the longest waiting.
	later := now.Add(3 * time.Second)
	key, c, d2, ok := l.finish("team-a/c1/u1", a1, lostBackups{}, later)
	select {
	case <-a1:
	default:
		t.Error("the finished listing's channel is still open")
	}
	if !ok || key != "team-a/c2/u2" || c.Name != "c2" || d2 == nil {
		t.Fatalf("next: %q %v, want c2, the longest waiting", key, ok)
	}
	// c1 asks again at once: both of team-a's goroutines are busy, so it waits.
	if d, _ := l.begin("team-a/c1/u1", cl("c1"), later); d != nil {
		t.Error("c1 asked again and went beside c0 and c2")
	}
	if key, _, _, ok := l.finish("team-a/c0/u0", b1, lostBackups{}, later); !ok || key != "team-a/c3/u3" {
		t.Errorf("next: %q %v, want c3", key, ok)
	}
	if key, _, _, ok := l.finish("team-a/c2/u2", d2, lostBackups{}, later); !ok || key != "team-a/c1/u1" {
		t.Errorf("next: %q %v, want c1", key, ok)
	}
}

// A cluster forgotten while its listing runs (deleted, or no longer lost) keeps counting
// against its namespace until that goroutine ends, and its result is dropped: flapping a
// cluster between lost and not lost cannot multiply listings against a slow endpoint.
func TestForgottenListingStillCounts(t *testing.T) {
	var l lostBackupCache
	now := proofNow
	cl := teamACluster
	d1, _ := l.begin("team-a/c1/u1", cl("c1"), now)
	d2, _ := l.begin("team-a/c2/u2", cl("c2"), now)
	l.forget("team-a/c1/u1")
	if d, start := l.begin("team-a/c1/u1", cl("c1"), now.Add(time.Second)); d != nil || start {
		t.Error("a forgotten cluster's new listing started beside the two still running")
	}
	if _, _, _, ok := l.finish("team-a/c1/u1", d1, lostBackups{problems: []string{"stale"}}, now.Add(2*time.Second)); !ok {
		t.Error("the forgotten listing's goroutine did not take the waiting one")
	}
	if found, ok := l.last("team-a/c1/u1", ""); ok && len(found.problems) > 0 && found.problems[0] == "stale" {
		t.Error("the forgotten listing's result was kept")
	}
	// A waiter that stopped asking is dropped; the namespace's count goes back to zero.
	l.begin("team-a/gone/u3", cl("gone"), now)
	if key, _, _, ok := l.finish("team-a/c2/u2", d2, lostBackups{}, now.Add(3*backupListInterval)); ok {
		t.Errorf("finish handed over %s, which stopped asking long ago", key)
	}
	if n := l.queue().Running("team-a"); n != 1 {
		t.Errorf("team-a counts %d running listings, want 1 (the re-listing of c1)", n)
	}
}

// hangingListingFixture is a bootstrapped cluster whose one EtcdBackup (with its
// credentials) stores on an S3 endpoint that accepts connections and never answers;
// listings counts the connections it accepted.
func hangingListingFixture(t *testing.T) (f *proofFixture, listings func() int) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "ns"}, Data: map[string][]byte{
		"credentials": []byte("[default]\naws_access_key_id = a\naws_secret_access_key = b\n")}}
	endpoint, listings := fixture.SilentS3(t)
	f = newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) { c.Status.Bootstrapped = true },
		secret, s3Backup("b", "c", lossBucket+"/c/per", endpoint))
	return f, listings
}

// teamACluster is an EtcdCluster name in namespace team-a, for the listing queue's tests.
func teamACluster(name string) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
}
