//go:build integration

package etcdcluster

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// A total-loss restore verifies the backups newest first as the restore step will, and
// records the first that passes (object, its revision, checksum, the EtcdBackup's UID)
// before it creates the one member that restores it; backups of other clusters are never
// candidates. The member's pod restores exactly that object with the EtcdBackup's own
// credentials, under a token of its own, and carries the record's marker.
func TestTotalLossRestoreRecordsTheNewestRestorableBackupFirst(t *testing.T) {
	srv, store := fixture.MinIOStore(t, lossBucket)
	ctx := context.Background()
	snap := etcdtest.Snapshot(t, 5)
	put := func(key string, data []byte) {
		t.Helper()
		md := map[string]string{backupselect.MetaBackupNamespace: "ns", backupselect.MetaBackupName: "b"}
		if strings.HasPrefix(key, "other/") {
			md[backupselect.MetaBackupName] = "o"
		}
		if _, err := store.Put(ctx, key, bytes.NewReader(data), backup.PutOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	good := backup.PeriodicKey("c/per", 20, at)
	put(backup.PeriodicKey("c/per", 10, at.Add(-time.Hour)), snap)
	put(good, snap)
	put(backup.PeriodicKey("c/per", 30, at.Add(time.Hour)), snap[:len(snap)/2]) // newest: truncated, its checksum matches
	put(backup.PeriodicKey("other/per", 40, at.Add(2*time.Hour)), snap)         // newer, of another cluster
	put("c/per-stray", snap)                                                    // not named like this backup's

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "ns"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	mine := s3Backup("b", "c", lossBucket+"/c/per", srv.Endpoint())
	theirs := s3Backup("o", "other", lossBucket+"/other/per", srv.Endpoint())

	var creates []creation
	f := newProofFixtureWith(t, recordCreates(&creates), func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations = map[string]string{etcdv1beta2.AnnotationAllowRestoreFromBackup: "true"}
		c.Status.Bootstrapped = true
	}, secret, mine, theirs)

	// What the planner is shown: the newest object of this cluster's backup.
	o := f.observed(t)
	o.planner = planner.Observed{Now: proofNow, Bootstrapped: true}
	if err := f.r.observeTotalLoss(ctx, f.cluster, o); err != nil {
		t.Fatal(err)
	}
	if b := o.planner.Backup; b == nil || b.Backup != "b" || b.Path != lossBucket+"/"+backup.PeriodicKey("c/per", 30, at.Add(time.Hour)) || b.Revision != 30 {
		t.Fatalf("candidate %+v, want the newest object of EtcdBackup b", o.planner.Backup)
	}
	if o.planner.AllLostSince != proofNow {
		t.Errorf("loss since %v, want now", o.planner.AllLostSince)
	}

	a := planner.Action{Kind: planner.RestoreFromBackup, Name: "c-n", Version: "3.7.3", Revision: 30}
	f.actChecked(t, o, a)
	rec := stored(t, f.c).Status.BackupRestore
	if rec == nil || rec.Backup != "b" || rec.BackupUID != "uid-b" || rec.Path != lossBucket+"/"+good || rec.Member != "c-n" ||
		rec.Revision != 6 || len(rec.SHA256) != 64 || rec.FinishedAt != nil ||
		!strings.HasPrefix(rec.Token, render.ClusterToken(f.cluster)+"-b") {
		t.Fatalf("recorded restore %+v, want the newest restorable object %s at the revision its snapshot holds (6: five puts)", rec, good)
	}
	for _, cr := range creates {
		if cr.name == render.SnapshotCheckPodName(f.cluster.Name, backupCheckSuffix) {
			continue // the candidates' checks come before the choice is recorded
		}
		if cr.stored.BackupRestore == nil {
			t.Errorf("%s %s created before the restore was recorded", cr.kind, cr.name)
		}
	}
	p := f.pod(t, "c-n")
	if p.Annotations[render.AnnotationRecoveryToken] != rec.Token {
		t.Errorf("member's pod marked %q, want the restore's token", p.Annotations[render.AnnotationRecoveryToken])
	}
	if s, ic, tok := etcdFlag(p, "initial-cluster-state"), etcdFlag(p, "initial-cluster"), etcdFlag(p, "initial-cluster-token"); s != render.StateNew ||
		ic != "c-n=http://c-n.c.ns.svc:2380" || tok != rec.Token {
		t.Errorf("member: state %s, initial cluster %s, token %s; want a cluster of its own under %s", s, ic, tok, rec.Token)
	}
	args := ""
	if len(p.Spec.InitContainers) == 1 {
		args = strings.Join(p.Spec.InitContainers[0].Args, " ")
	}
	for _, want := range []string{"--s3-path=" + rec.Path, "--checksum=" + rec.SHA256, "--s3-endpoint=" + srv.Endpoint(), "--initial-cluster-token=" + rec.Token} {
		if !strings.Contains(args, want) {
			t.Errorf("restore step args %q lack %q", args, want)
		}
	}
	f.sawEvent(t, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoringFromBackup)
}
