package kubectletcd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestNewRestore(t *testing.T) {
	existing := testCluster()
	existing.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{OperatorSecret: "op"}}
	existing.Spec.Paused = true
	pvc := s3Backup("pvc")
	pvc.Spec.S3, pvc.Spec.PVC, pvc.Spec.StorageType = nil, &etcdv1beta2.PVCBackupSource{ClaimName: "claim", Path: "demo.db"}, etcdv1beta2.BackupStorageTypePVC

	for name, tc := range map[string]struct {
		backup   *etcdv1beta2.EtcdBackup
		existing *etcdv1beta2.EtcdCluster
		source   *etcdv1beta2.EtcdCluster
		o        RestoreOptions
		wantErr  string
		wantAnn  map[string]string
		check    func(t *testing.T, er *etcdv1beta2.EtcdRestore)
	}{
		"newest": {backup: s3Backup("nightly"), wantAnn: map[string]string{etcdv1beta2.RestoreBackupRefAnnotation: "nightly"}},
		"at, min revision, size": {backup: s3Backup("nightly"), o: RestoreOptions{At: "2026-12-03T12:00:00+02:00", MinRevision: 7, Size: 1},
			wantAnn: map[string]string{etcdv1beta2.RestoreBackupRefAnnotation: "nightly", etcdv1beta2.RestoreNewestBeforeAnnotation: "2026-12-03T10:00:00Z",
				etcdv1beta2.RestoreMinRevisionAnnotation: "7", restoreClusterSpecAnnotation: `{"size":1}`}},
		"bad at":   {backup: s3Backup("nightly"), o: RestoreOptions{At: "2026-12-03 10:00"}, wantErr: "no replay to an arbitrary instant"},
		"bad size": {backup: s3Backup("nightly"), o: RestoreOptions{Size: 100}, wantErr: "--size 100"},
		"exists":   {backup: s3Backup("nightly"), existing: existing, wantErr: "EtcdCluster demo exists"},
		// A backup of a cluster with etcd auth: only replacing that cluster carries the
		// credentials over.
		"auth source into a new name":   {backup: s3Backup("nightly"), source: authCluster("demo-src", true, false), wantErr: "EtcdCluster demo-src, which has etcd authentication on"},
		"auth source by condition only": {backup: s3Backup("nightly"), source: authCluster("demo-src", false, true), wantErr: "--replace"},
		"auth source replacing another": {backup: s3Backup("nightly"), existing: existing, source: authCluster("demo-src", true, false), o: RestoreOptions{Replace: true}, wantErr: "Secret demo-src-etcd-root"},
		"auth source replaced":          {backup: s3Backup("nightly"), existing: authCluster("demo", true, false), source: authCluster("demo", true, false), o: RestoreOptions{Replace: true}},
		"auth source acknowledged":      {backup: s3Backup("nightly"), source: authCluster("demo-src", true, false), o: RestoreOptions{IgnoreSourceAuth: true}},
		"source without auth":           {backup: s3Backup("nightly"), source: authCluster("demo-src", false, false)},
		"pvc with at":                   {backup: pvc, o: RestoreOptions{At: "2026-12-03T10:00:00Z"}, wantErr: "stores on a PVC: its restore reads exactly the file at demo.db"},
		"pvc replace":                   {backup: pvc, existing: existing, o: RestoreOptions{Replace: true}, wantErr: "cannot verify before deleting"},
		"pvc": {backup: pvc, check: func(t *testing.T, er *etcdv1beta2.EtcdRestore) {
			if er.Spec.BackupStorageType != etcdv1beta2.BackupStorageTypePVC || er.Spec.PVC == nil || er.Spec.PVC.ClaimName != "claim" || er.Spec.PVC.Path != "demo.db" {
				t.Errorf("spec %+v", er.Spec)
			}
		}},
		"replace keeps the spec": {backup: s3Backup("nightly"), existing: existing, o: RestoreOptions{Replace: true, Size: 5}, check: func(t *testing.T, er *etcdv1beta2.EtcdRestore) {
			if er.Annotations[replaceExistingClusterAnnotaton] != "true" {
				t.Errorf("annotations %v", er.Annotations)
			}
			var spec etcdv1beta2.EtcdClusterSpec
			if err := json.Unmarshal([]byte(er.Annotations[restoreClusterSpecAnnotation]), &spec); err != nil {
				t.Fatal(err)
			}
			if spec.Size != 5 || spec.Paused || spec.TLS == nil || spec.TLS.Static.OperatorSecret != "op" || spec.Version != "3.6.16" {
				t.Errorf("restored spec %+v", spec)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			er, err := newRestore("demo", tc.backup, tc.existing, tc.source, tc.o, now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if er.Name != "demo-restore-20261206-120000" || er.Spec.EtcdCluster.Name != "demo" || er.Namespace != "ns" {
				t.Errorf("restore %s/%s of %s", er.Namespace, er.Name, er.Spec.EtcdCluster.Name)
			}
			for k, v := range tc.wantAnn {
				if er.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, er.Annotations[k], v)
				}
			}
			if tc.check != nil {
				tc.check(t, er)
			}
		})
	}
}

// restore --wait returns the operator's outcome: here a refusal, as an error naming it.
func TestRestoreWaitReportsFailure(t *testing.T) {
	p := newTestPlugin(t, testCluster(), s3Backup("nightly"))
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := run(p.Plugin, nil, "restore", "copy", "--from", "nightly", "--wait", "--timeout", "10s")
		done <- err
	}()
	// Play the operator: fail the restore once it exists.
	for {
		var list etcdv1beta2.EtcdRestoreList
		if err := p.C.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 1 {
			er := &list.Items[0]
			er.Status.Conditions = []metav1.Condition{{Type: etcdv1beta2.RestoreConditionSucceeded, Status: metav1.ConditionFalse,
				Reason: etcdv1beta2.ReasonNoBackupMatches, Message: "nothing before then", LastTransitionTime: metav1.Now()}}
			if err := p.C.Status().Update(ctx, er); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "NoBackupMatches: nothing before then") {
		t.Errorf("err %v", err)
	}
	var er etcdv1beta2.EtcdRestore
	if err := p.C.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "copy-restore-20261206-120000"}, &er); err != nil {
		t.Fatal(err)
	}
}

// authCluster is a cluster name with etcd auth asked for by annotation and/or reported
// on by its AuthEnabled condition.
func authCluster(name string, annotated, condition bool) *etcdv1beta2.EtcdCluster {
	c := testCluster()
	c.Name = name
	if annotated {
		c.Annotations = map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
	}
	if condition {
		c.Status.Conditions = append(c.Status.Conditions, etcdv1beta2.ClusterCondition{Type: etcdv1beta2.ClusterConditionAuthEnabled, Status: corev1.ConditionTrue})
	}
	return c
}

// Restore finds the backed-up cluster itself (by clusterRef) and refuses a new name
// when it has auth, before creating anything.
func TestRestoreRefusesAuthSourceIntoANewName(t *testing.T) {
	src := authCluster("demo", true, false)
	p := newTestPlugin(t, src, s3Backup("nightly"))
	_, err := run(p.Plugin, nil, "restore", "demo-copy", "--from", "nightly")
	if err == nil || !strings.Contains(err.Error(), "EtcdCluster demo, which has etcd authentication on") ||
		!strings.Contains(err.Error(), etcdv1beta2.AuthRootSecretAnnotation) {
		t.Fatalf("err %v", err)
	}
	var list etcdv1beta2.EtcdRestoreList
	if err := p.C.List(context.Background(), &list); err != nil || len(list.Items) != 0 {
		t.Errorf("restores %v %v", list.Items, err)
	}
	if _, err := run(p.Plugin, nil, "restore", "demo-copy", "--from", "nightly", "--ignore-source-auth"); err != nil {
		t.Errorf("--ignore-source-auth: %v", err)
	}
}
