package kubectletcd

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// With one EtcdBackup of the cluster, backup asks it for a backup now; --wait returns
// once the operator recorded the value, with the backup's outcome.
func TestBackupNow(t *testing.T) {
	eb := s3Backup("nightly")
	value := now.UTC().Format(time.RFC3339Nano)
	eb.Status.LastBackupNow = value // as the operator records it once run
	p := newTestPlugin(t, testCluster(), eb)
	out, err := run(p.Plugin, nil, "backup", "demo", "--wait")
	if err != nil {
		t.Fatal(err)
	}
	var got etcdv1beta2.EtcdBackup
	if err := p.C.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "nightly"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[etcdv1beta2.BackupNowAnnotation] != value {
		t.Errorf("annotations %v, want backup-now %s", got.Annotations, value)
	}
	if !strings.Contains(out, "etcdbackup/nightly: backup-now "+value) || !strings.Contains(out, "succeeded=true revision=42") {
		t.Errorf("output %q", out)
	}
}

// A wait that the operator never answers ends at --timeout saying why it may be late.
func TestBackupNowWaitTimesOut(t *testing.T) {
	p := newTestPlugin(t, testCluster(), s3Backup("nightly"))
	_, err := run(p.Plugin, nil, "backup", "demo", "--wait", "--timeout", "20ms")
	if err == nil || !strings.Contains(err.Error(), "at most one per 5 minutes") {
		t.Errorf("err %v", err)
	}
}

func TestBackupChoosesAmongSeveral(t *testing.T) {
	p := newTestPlugin(t, testCluster(), s3Backup("nightly"), s3Backup("hourly"))
	if _, err := run(p.Plugin, nil, "backup", "demo"); err == nil || !strings.Contains(err.Error(), "has 2 EtcdBackups (hourly, nightly): name one with --backup") {
		t.Errorf("err %v", err)
	}
	if _, err := run(p.Plugin, nil, "backup", "demo", "--one-shot"); err == nil || !strings.Contains(err.Error(), "name the one whose storage the one-shot copies with --backup") {
		t.Errorf("one-shot among several: %v", err)
	}
	if _, err := run(p.Plugin, nil, "backup", "demo", "--backup", "hourly"); err != nil {
		t.Fatal(err)
	}
	var hourly, nightly etcdv1beta2.EtcdBackup
	_ = p.C.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "hourly"}, &hourly)
	_ = p.C.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "nightly"}, &nightly)
	if hourly.Annotations[etcdv1beta2.BackupNowAnnotation] == "" || nightly.Annotations[etcdv1beta2.BackupNowAnnotation] != "" {
		t.Errorf("backup-now on hourly %v, nightly %v", hourly.Annotations, nightly.Annotations)
	}
}

// --one-shot beside an existing S3 backup writes a new key of the same store; without
// any EtcdBackup, the flags say where, and without them the error says which.
func TestOneShot(t *testing.T) {
	p := newTestPlugin(t, testCluster(), s3Backup("nightly"))
	if _, err := run(p.Plugin, nil, "backup", "demo", "--one-shot"); err != nil {
		t.Fatal(err)
	}
	var eb etcdv1beta2.EtcdBackup
	if err := p.C.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "demo-manual-20261206-120000"}, &eb); err != nil {
		t.Fatal(err)
	}
	if eb.Spec.ClusterRef == nil || eb.Spec.ClusterRef.Name != "demo" || eb.Spec.BackupPolicy != nil || eb.Spec.S3 == nil ||
		eb.Spec.S3.Path != "bucket/demo/nightly-manual-20261206-120000" || eb.Spec.S3.AWSSecret != "aws" || eb.Spec.S3.Endpoint != "http://minio:9000" {
		t.Errorf("one-shot %+v %+v", eb.Spec, eb.Spec.S3)
	}

	bare := newTestPlugin(t, testCluster())
	if _, err := run(bare.Plugin, nil, "backup", "demo"); err == nil || !strings.Contains(err.Error(), "no EtcdBackup names cluster demo: give --s3-path and --s3-secret") {
		t.Errorf("err %v", err)
	}
	for args, want := range map[string]string{
		"--s3-path bucket/k":                        "--s3-path needs --s3-secret",
		"--s3-path nokey --s3-secret aws":           `--s3-path "nokey": want <bucket>/<key>`,
		"--pvc-claim c":                             "--pvc-claim needs --pvc-path",
		"--s3-path b/k --s3-secret a --pvc-claim c": "not both",
	} {
		_, err := run(bare.Plugin, nil, append([]string{"backup", "demo"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", args, err, want)
		}
	}
	out, err := run(bare.Plugin, nil, "backup", "demo", "--s3-path", "b/demo.db", "--s3-secret", "aws", "--s3-endpoint", "http://m:9000", "--s3-force-path-style", "-o", "json")
	if err != nil || !strings.Contains(out, `"action": "created"`) || !strings.Contains(out, `"storage": "s3://b/demo.db"`) {
		t.Errorf("one-shot from flags: %v\n%s", err, out)
	}
}
