package restore

import (
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/cmd/cmdtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
)

func TestFlagsRoundTrip(t *testing.T) {
	cmdtest.RoundTrip(t, cmdtest.Program[Options]{
		Args: Args, Parse: cmdtest.Parser(flags), Flags: flags(new(Options)),
		Defaults: Options{Source: inpod.Source{AWSSecretDir: inpod.DefaultAWSSecretDir}, Timeout: DefaultTimeout},
		Full: Options{
			Source: inpod.Source{
				S3Path: "b/k", S3Endpoint: "http://minio:9000", S3ForcePathStyle: true, AWSSecretDir: "/aws", S3Ambient: true,
				EncryptionKeyFile: "/key/key", Dir: "/backup", Key: "db/snap", Latest: true,
				BackupNamespace: "ns", BackupName: "nightly", BackupRevision: 42,
			},
			Checksum: strings.Repeat("ab", 32), ChecksPassedForPin: true,
			FromMember: "https://m0:2379", MinRevision: 7, ClientTLSDir: "/tls",
			Name: "m1", DataDir: "/var/etcd/data", InitialAdvertisePeerURLs: "http://m1:2380",
			InitialCluster: "m1=http://m1:2380", InitialClusterToken: "tok", Timeout: 3 * time.Minute,
		},
	})
}

// A bad flag is refused with exit code 2 before anything runs.
func TestRunRefusesBadFlag(t *testing.T) {
	if code := Run([]string{"--timeout=soon"}); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
}
