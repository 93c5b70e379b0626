//go:build integration

package etcdcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// lossStore is a MinIO bucket and the awsSecret "aws" of namespace "ns" that reads it.
func lossStore(t *testing.T) (backup.Store, *corev1.Secret, string) {
	t.Helper()
	srv, store := fixture.MinIOStore(t, lossBucket)
	return store, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "ns"}, Data: fixture.AWSSecretData(srv)}, srv.Endpoint()
}

// Two EtcdBackups writing the same prefix (two teams sharing a bucket, a copy-pasted
// s3.path): cluster c restores only objects its own EtcdBackup wrote, by their metadata,
// even when the other's object is newer and restorable.
func TestTotalLossRestoresOnlyItsOwnBackupsObjects(t *testing.T) {
	store, secret, endpoint := lossStore(t)
	ctx := context.Background()
	snap := etcdtest.Snapshot(t, 5)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	put := func(key, owner string) {
		t.Helper()
		md := map[string]string{backupselect.MetaBackupNamespace: "ns", backupselect.MetaBackupName: owner}
		if _, err := store.Put(ctx, key, bytes.NewReader(snap), backup.PutOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	ours, theirs := backup.PeriodicKey("shared/per", 10, at), backup.PeriodicKey("shared/per", 20, at.Add(time.Hour))
	put(ours, "b")
	put(theirs, "o") // newer, same names, another cluster's EtcdBackup

	f := newProofFixtureWith(t, recordCreates(new([]creation)), func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations = map[string]string{etcdv1beta2.AnnotationAllowRestoreFromBackup: "true"}
		c.Status.Bootstrapped = true
	}, secret, s3Backup("b", "c", lossBucket+"/shared/per", endpoint), s3Backup("o", "other", lossBucket+"/shared/per", endpoint))

	o := lostObservation(t, f, proofNow)
	if b := o.planner.Backup; b == nil || b.Backup != "b" || b.Path != lossBucket+"/"+ours {
		t.Fatalf("candidate %+v, want EtcdBackup b's own %s", o.planner.Backup, ours)
	}
	a := planner.Action{Kind: planner.RestoreFromBackup, Name: "c-n", Version: "3.7.3", Revision: 10}
	f.actChecked(t, o, a)
	if rec := stored(t, f.c).Status.BackupRestore; rec == nil || rec.Backup != "b" || rec.Path != lossBucket+"/"+ours {
		t.Fatalf("recorded %+v, want EtcdBackup b's own %s", rec, ours)
	}
}

// A choice that found nothing restorable is not tried again (downloading candidates
// again) for backupChooseRetry; the error says until when. A cluster no longer lost
// forgets it.
func TestFailedChoiceIsNotRetriedAtOnce(t *testing.T) {
	store, secret, endpoint := lossStore(t)
	key := backup.PeriodicKey("c/per", 10, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	md := map[string]string{backupselect.MetaBackupNamespace: "ns", backupselect.MetaBackupName: "b"}
	if _, err := store.Put(context.Background(), key, strings.NewReader("not a snapshot"), backup.PutOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations = map[string]string{etcdv1beta2.AnnotationAllowRestoreFromBackup: "true"}
		c.Status.Bootstrapped = true
	}, secret, s3Backup("b", "c", lossBucket+"/c/per", endpoint))
	now := proofNow
	f.r.Now = func() time.Time { return now }

	_, err := f.chooseChecked(t)
	if err == nil || !strings.Contains(err.Error(), "s3://"+lossBucket+"/"+key) {
		t.Fatalf("first choice: %v, want the object's failure", err)
	}
	// Restorable now: still not tried again within the retry gap.
	if _, err := store.Put(context.Background(), key, bytes.NewReader(etcdtest.Snapshot(t, 1)), backup.PutOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	now = proofNow.Add(backupChooseRetry - time.Second)
	if _, err := f.r.chooseBackup(context.Background(), f.cluster); err == nil || !strings.Contains(err.Error(), "not tried again before") {
		t.Fatalf("within the retry gap: %v", err)
	}
	now = proofNow.Add(backupChooseRetry)
	if rec, err := f.chooseChecked(t); err != nil || rec.Path != lossBucket+"/"+key {
		t.Fatalf("after the retry gap: %+v %v", rec, err)
	}
}

// Choosing a lost cluster's backup reads each candidate's metadata at the tenant's
// endpoint; against an endpoint that lists at once and then hangs, the choice holds no
// worker: it returns at once saying the reads run apart, and once the reads' budget is
// spent a later choice fails saying so.
func TestTotalLossChoiceLeavesTheWorker(t *testing.T) {
	store, secret, target := lossStore(t)
	ctx := context.Background()
	key := backup.PeriodicKey("c/per", 10, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	md := map[string]string{backupselect.MetaBackupNamespace: "ns", backupselect.MetaBackupName: "b"}
	if _, err := store.Put(ctx, key, bytes.NewReader(etcdtest.Snapshot(t, 1)), backup.PutOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	endpoint, reads := fixture.HangingReadsS3(t, target)
	f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations = map[string]string{etcdv1beta2.AnnotationAllowRestoreFromBackup: "true"}
		c.Status.Bootstrapped = true
	}, secret, s3Backup("b", "c", lossBucket+"/c/per", endpoint))
	f.r.lostBackups.awaitListings = false // as in production
	f.r.lostBackups.listTimeout = time.Second
	f.r.lostBackups.chooseBudget = 20 * time.Second

	// The listing (its own metadata read cut at its deadline) lists the object.
	poll.Eventually(t, time.Minute, 50*time.Millisecond, "the listing's result", func() error {
		if found := f.r.listLostBackups(ctx, f.cluster, f.r.Now()); len(found.objs) != 1 {
			return fmt.Errorf("listed %d objects (%q)", len(found.objs), found.problems)
		}
		return nil
	})
	// choose returns the choice's error, failing the test if the choice does not return
	// well within the reads' budget (a worker held by the endpoint).
	choose := func() error {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := f.r.chooseBackup(ctx, f.cluster)
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the choice is still running: the endpoint holds the worker")
			return nil
		}
	}
	held := reads()
	err := choose()
	if p, ok := errors.AsType[*backupCheckPending](err); !ok || !strings.Contains(p.msg, "apart from the reconcile workers") {
		t.Fatalf("first choice: %v, want pending while the metadata is read apart", err)
	}
	poll.Eventually(t, time.Minute, 20*time.Millisecond, "the metadata read held at the endpoint", func() error {
		if reads() == held {
			return errors.New("no read yet")
		}
		return nil
	})
	poll.Eventually(t, time.Minute, 100*time.Millisecond, "the choice's failure past the budget", func() error {
		err := choose()
		if _, pending := errors.AsType[*backupCheckPending](err); pending {
			return err
		}
		if err == nil || !strings.Contains(err.Error(), "checking the backups took longer than 20s (0 of 1 checked)") {
			t.Fatalf("choice: %v, want the budget's failure", err)
		}
		return nil
	})
}
