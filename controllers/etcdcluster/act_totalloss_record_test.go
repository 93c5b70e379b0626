package etcdcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// s3Backup is an EtcdBackup of cluster in ns "ns" writing periodic backups to path.
func s3Backup(name, cluster, path, endpoint string) *etcdv1beta2.EtcdBackup {
	return &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: cluster},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: path, AWSSecret: "aws", Endpoint: endpoint, ForcePathStyle: true}}},
	}
}

// A recorded restore is only a claim: it is honoured only while the EtcdBackup it names
// exists with the recorded UID, backs up this cluster and wrote the recorded object. Any
// other record creates no pod and says why; the Secret and endpoint always come from the
// EtcdBackup, never from status.
func TestBackupRestoreRecordIsHonouredOnlyIfTheOperatorsOwn(t *testing.T) {
	const path = lossBucket + "/c/per_v20_2026-12-01-00:00:00"
	genuine := func() *etcdv1beta2.BackupRestoreStatus {
		return &etcdv1beta2.BackupRestoreStatus{Backup: "b", BackupUID: "uid-b", Path: path, Revision: 20,
			Member: "c-n", Token: "c-tok", StartedAt: metav1.NewTime(proofNow)}
	}
	for _, tc := range []struct {
		name    string
		edit    func(*etcdv1beta2.BackupRestoreStatus)
		wantErr string
	}{
		{"genuine", func(*etcdv1beta2.BackupRestoreStatus) {}, ""},
		{"no such EtcdBackup", func(r *etcdv1beta2.BackupRestoreStatus) { r.Backup = "nobody" }, "not found"},
		{"wrong uid", func(r *etcdv1beta2.BackupRestoreStatus) { r.BackupUID = "uid-guessed" }, "uid"},
		{"no uid", func(r *etcdv1beta2.BackupRestoreStatus) { r.BackupUID = "" }, "uid"},
		{"EtcdBackup of another cluster", func(r *etcdv1beta2.BackupRestoreStatus) { r.Backup, r.BackupUID = "o", "uid-o" }, "does not back up"},
		{"object it did not write", func(r *etcdv1beta2.BackupRestoreStatus) { r.Path = lossBucket + "/secrets/dump.db" }, "not one it wrote"},
		{"another bucket", func(r *etcdv1beta2.BackupRestoreStatus) { r.Path = "private/c/per_v20_2026-12-01-00:00:00" }, "not one it wrote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newProofFixture(t, nil,
				s3Backup("b", "c", lossBucket+"/c/per", "http://minio:9000"), s3Backup("o", "other", lossBucket+"/c/per", "http://minio:9000"))
			rec := genuine()
			tc.edit(rec)
			f.setStatus(t, func(st *etcdv1beta2.EtcdClusterStatus) { st.BackupRestore = rec })
			m := render.Member{Name: "c-n", Version: "3.7.3", InitialClusterState: render.StateNew,
				InitialCluster: render.InitialCluster(f.cluster, []string{"c-n"}, ""), Token: rec.Token}
			err := f.r.createMembers(context.Background(), f.cluster, []render.Member{m})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one mentioning %q", err, tc.wantErr)
				}
				if names := f.podNames(t); len(names) != 0 {
					t.Errorf("pods %v created for a record the operator did not write", names)
				}
				f.sawEvent(t, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoreSourceRejected)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := f.pod(t, "c-n")
			if len(p.Spec.InitContainers) != 1 {
				t.Fatalf("init containers %+v, want the restore step", p.Spec.InitContainers)
			}
			args := strings.Join(p.Spec.InitContainers[0].Args, " ")
			if !strings.Contains(args, "--s3-path="+path) || !strings.Contains(args, "--s3-endpoint=http://minio:9000") {
				t.Errorf("restore step args %q", args)
			}
			var secretVolume string
			for _, v := range p.Spec.Volumes {
				if v.Secret != nil {
					secretVolume = v.Secret.SecretName
				}
			}
			if secretVolume != "aws" {
				t.Errorf("restore step mounts Secret %q, want the EtcdBackup's", secretVolume)
			}
		})
	}
}

// Finishing keeps the record (where the data came from), marks it finished, removes the
// pod's marker and says, in a condition and an event, that later writes are gone.
// Abandoning deletes only the marked member's pod the plan names, never anything else.
func TestFinishAndAbortBackupRestore(t *testing.T) {
	rec := func() *etcdv1beta2.BackupRestoreStatus {
		return &etcdv1beta2.BackupRestoreStatus{Backup: "b", BackupUID: "uid-b", Path: lossBucket + "/c/per_v20_2026-12-01-00:00:00",
			Revision: 20, Member: "c-n", Token: "c-tok", StartedAt: metav1.NewTime(proofNow.Add(-time.Minute))}
	}
	marked := func() *corev1.Pod {
		p := ownedMemberPod("c-n", "uid-c")
		p.Annotations = map[string]string{render.AnnotationRecoveryToken: "c-tok"}
		return p
	}

	t.Run("finish", func(t *testing.T) {
		f := newProofFixture(t, nil, marked())
		f.setStatus(t, func(st *etcdv1beta2.EtcdClusterStatus) { st.BackupRestore = rec() })
		a := planner.Action{Kind: planner.FinishBackupRestore, Name: "c-n", ID: 7, Revision: 20}
		if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-n"), a); err != nil {
			t.Fatal(err)
		}
		got := stored(t, f.c)
		if r := got.Status.BackupRestore; r == nil || r.FinishedAt == nil || r.Path != rec().Path {
			t.Errorf("record after finishing %+v, want it kept and finished", r)
		}
		if _, ok := f.pod(t, "c-n").Annotations[render.AnnotationRecoveryToken]; ok {
			t.Error("the member still carries the restore's marker")
		}
		var cond *etcdv1beta2.ClusterCondition
		for i := range got.Status.Conditions {
			if got.Status.Conditions[i].Type == ClusterConditionRestoredFromBackup {
				cond = &got.Status.Conditions[i]
			}
		}
		if cond == nil || cond.Status != corev1.ConditionTrue || !strings.Contains(cond.Message, "writes after revision 20 are gone") ||
			!strings.Contains(cond.Message, rec().Path) {
			t.Errorf("condition %+v", cond)
		}
		f.sawEvent(t, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoredFromBackup)
	})

	t.Run("abort deletes only the marked member's pod", func(t *testing.T) {
		f := newProofFixture(t, nil, marked())
		f.setStatus(t, func(st *etcdv1beta2.EtcdClusterStatus) { st.BackupRestore = rec() })
		a := planner.Action{Kind: planner.AbortBackupRestore, Name: "c-n", DeletePod: true, Reason: etcdv1beta2.ReasonBackupRestoreAborted, Message: "timed out"}
		if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-n"), a); err != nil {
			t.Fatal(err)
		}
		if stored(t, f.c).Status.BackupRestore != nil {
			t.Error("record kept after abandoning")
		}
		if len(f.deletes) != 1 || f.deletes[0].name != "c-n" || f.deletes[0].uid != "uid-c-n" {
			t.Errorf("deletes %+v, want only pod c-n under its UID", f.deletes)
		}
	})

	t.Run("a forged record is forgotten, nothing deleted", func(t *testing.T) {
		f := newProofFixture(t, nil, ownedMemberPod("c-n", "uid-c"))
		f.setStatus(t, func(st *etcdv1beta2.EtcdClusterStatus) { st.BackupRestore = rec() })
		a := planner.Action{Kind: planner.AbortBackupRestore, Name: "c-n", Reason: etcdv1beta2.ReasonBackupRestoreRecordInvalid, Message: "not ours"}
		if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-n"), a); err != nil {
			t.Fatal(err)
		}
		if len(f.deletes) != 0 || !f.exists(t, &corev1.Pod{}, "c-n") {
			t.Errorf("deletes %+v for a forged record", f.deletes)
		}
	})
}

// Anything labelled as the cluster's, controlled by it or not, running or terminating,
// pod or claim, means a member's data may survive: no loss is timed and no backup looked
// for.
func TestTotalLossNeedsNothingLeft(t *testing.T) {
	stray := ownedMemberPod("c-x", "") // not controlled by the cluster
	claim := memberClaim("c-y", "")
	for name, obj := range map[string]client.Object{"uncontrolled pod": stray, "uncontrolled claim": claim} {
		t.Run(name, func(t *testing.T) {
			f := newProofFixture(t, nil, obj)
			o := f.observed(t)
			o.planner = planner.Observed{Now: proofNow, Bootstrapped: true}
			if err := f.r.observeTotalLoss(context.Background(), f.cluster, o); err != nil {
				t.Fatal(err)
			}
			if !o.planner.AllLostSince.IsZero() || o.planner.Backup != nil {
				t.Errorf("loss timed from %v with backup %+v while %s exists", o.planner.AllLostSince, o.planner.Backup, name)
			}
		})
	}
}

// A backup counts for a total-loss restore only if it backs up this cluster of this
// namespace: by spec.clusterRef, or by etcdEndpoints that name this cluster, and no other
// of the namespace, by DNS. An IP cannot name a cluster without pods.
func TestBackupTargets(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	clusters := map[string]bool{"c": true, "other": true, "c-client": true}
	byEndpoints := func(eps ...string) *etcdv1beta2.EtcdBackup {
		eb := s3Backup("b", "", "bkt/k", "")
		eb.Spec.ClusterRef, eb.Spec.EtcdEndpoints = nil, eps
		return eb
	}
	elsewhere := s3Backup("b", "c", "bkt/k", "")
	elsewhere.Namespace = "other-ns"
	for _, tc := range []struct {
		name string
		eb   *etcdv1beta2.EtcdBackup
		want bool
	}{
		{"clusterRef", s3Backup("b", "c", "bkt/k", ""), true},
		{"clusterRef to another cluster", s3Backup("b", "other", "bkt/k", ""), false},
		{"another namespace", elsewhere, false},
		{"client Service", byEndpoints("http://c-client.ns.svc:2379"), false}, // "c-client" is also a cluster: ambiguous
		{"member name", byEndpoints("http://c-abc.c.ns.svc.cluster.local:2379"), true},
		{"headless Service", byEndpoints("https://c.ns.svc:2379"), true},
		{"another namespace's Service", byEndpoints("http://c.other-ns.svc:2379"), false},
		{"another cluster's Service", byEndpoints("http://other-client.ns.svc:2379"), false},
		{"two clusters", byEndpoints("http://c.ns.svc:2379", "http://other.ns.svc:2379"), false},
		{"an IP", byEndpoints("http://10.0.0.1:2379"), false},
		{"no endpoints", byEndpoints(), false},
	} {
		if got := backupTargets(tc.eb, c, clusters); got != tc.want {
			t.Errorf("%s: targets = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !backupTargets(byEndpoints("http://c-client.ns.svc:2379", "c-client:2379"), c, map[string]bool{"c": true, "other": true}) {
		t.Error("the client Service of the only cluster it can name: not counted")
	}
}

// A total-loss restore prefers the newest object that passed a backup verification (as
// the EtcdBackup's status records it: the last one, or a flagged holding with the same
// key and revision) over newer objects that were only checksummed.
func TestTotalLossPrefersVerifiedBackups(t *testing.T) {
	eb := s3Backup("b", "c", lossBucket+"/c/per", "")
	eb.Status.LastVerifiedKey, eb.Status.LastVerifiedRevision = "c/per_v10", 10
	eb.Status.Backups = []etcdv1beta2.StoredBackup{
		{Key: "c/per_v20", Revision: 20, Verified: true},
		{Key: "c/per_v30", Revision: 30},
		{Key: "c/per_v25", Revision: 24, Verified: true}, // another revision under that key: not it
	}
	for _, tc := range []struct {
		key  string
		rev  int64
		want bool
	}{{"c/per_v10", 10, true}, {"c/per_v10", 11, false}, {"c/per_v20", 20, true}, {"c/per_v30", 30, false}, {"c/per_v25", 25, false}} {
		if got := verifiedObject(eb, tc.key, tc.rev); got != tc.want {
			t.Errorf("verifiedObject(%s@%d) = %v, want %v", tc.key, tc.rev, got, tc.want)
		}
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	objs := []backupObject{
		{key: "v10", revision: 10, at: at, verified: true},
		{key: "u30", revision: 30, at: at.Add(2 * time.Hour)},
		{key: "v20", revision: 20, at: at.Add(time.Hour), verified: true},
		{key: "u25", revision: 25, at: at.Add(90 * time.Minute)},
	}
	sortCandidates(objs)
	var got []string
	for _, o := range objs {
		got = append(got, o.key)
	}
	if strings.Join(got, " ") != "v20 v10 u30 u25" {
		t.Errorf("candidate order %v, want verified newest first, then the rest newest first", got)
	}
}

const lossBucket = "backups"
