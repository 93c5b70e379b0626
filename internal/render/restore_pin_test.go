package render

import (
	"slices"
	"testing"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// --checks-passed-for-pin is rendered only when the cluster controller proved the pin
// (RestoreStep.ChecksPassedForPin) and there is a pin to check the bytes against; a
// signature in the annotation alone never renders it.
func TestRestoreChecksPassedForPin(t *testing.T) {
	s3 := v1beta2.S3BackupSource{Path: "bucket/backups/db", AWSSecret: "aws"}
	for _, tc := range []struct {
		name   string
		sha    string
		proven bool
		sig    string
		want   bool
	}{
		{name: "proven pin", sha: testSHA, proven: true, want: true},
		{name: "signature carried, not proven", sha: testSHA, sig: testSHA},
		{name: "no pin", proven: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, step := restoredCluster(t, s3, tc.sha)
			step.ChecksPassedForPin = tc.proven
			step.Source.PinSignature = tc.sig
			got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, ""), Restore: step})
			args := got.pods["example-0000"].Spec.InitContainers[0].Args
			if has := slices.Contains(args, "--checks-passed-for-pin"); has != tc.want {
				t.Fatalf("--checks-passed-for-pin rendered %v, want %v: %q", has, tc.want, args)
			}
		})
	}
}
