package snapshotcheck

import (
	"strings"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/cmd/cmdtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
)

func TestFlagsRoundTrip(t *testing.T) {
	cmdtest.RoundTrip(t, cmdtest.Program[Options]{
		Args: Args, Skip: 1, Flags: flags(new(Options)), Parse: cmdtest.Parser(flags),
		Defaults: Options{Source: inpod.Source{AWSSecretDir: inpod.DefaultAWSSecretDir}, Timeout: DefaultTimeout,
			MaxObjectBytes: backup.DefaultMaxObjectBytes, ResultFile: inpod.DefaultResultFile},
		Full: Options{
			Source: inpod.Source{
				S3Path: "b/k", S3Endpoint: "http://minio:9000", S3ForcePathStyle: true, AWSSecretDir: "/aws", S3Ambient: true,
				EncryptionKeyFile: "/key/key", Dir: "/backup", Key: "db/snap", Latest: true,
				BackupNamespace: "ns", BackupName: "nightly", BackupRevision: 42,
			},
			DownloadDir: "/var/etcd-check", Timeout: time.Minute, MaxObjectBytes: 1 << 30, ResultFile: "/tmp/result",
		},
	})
	if a := Args(Options{}); len(a) != 1 || a[0] != Step {
		t.Errorf("zero options render %q, want only the step", a)
	}
	// Parse, for tests that play the pod, reads what Args renders.
	full := Options{Source: inpod.Source{S3Path: "b/k", S3Endpoint: "http://minio:9000"}, DownloadDir: "/d", Timeout: time.Minute}
	if got, err := Parse(Args(full)); err != nil || got.Source.S3Path != full.Source.S3Path || got.Source.S3Endpoint != full.Source.S3Endpoint || got.DownloadDir != "/d" {
		t.Errorf("Parse(Args(%+v)) = %+v, %v", full, got, err)
	}
	if _, err := Parse([]string{"--s3-path=b/k"}); err == nil {
		t.Error("Parse took arguments without the step")
	}
}

// A check is of one exact object: --latest is refused in the result, before any store
// is opened.
func TestRunRefusesLatest(t *testing.T) {
	result := cmdtest.ResultFile(t)
	args := Args(Options{Source: inpod.Source{S3Path: "b/k", Latest: true}, DownloadDir: t.TempDir(), ResultFile: result})
	if code := Run(args[1:]); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if reason, msg := cmdtest.ReadResult(t, result); reason != etcdv1beta2.ReasonVerificationFailed || !strings.Contains(msg, "--latest") {
		t.Errorf("result %s: %s: want %s naming --latest", reason, msg, etcdv1beta2.ReasonVerificationFailed)
	}
}
