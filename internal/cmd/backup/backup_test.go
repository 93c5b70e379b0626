package backup

import (
	"strings"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/cmdtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
)

func TestFlagsRoundTrip(t *testing.T) {
	cmdtest.RoundTrip(t, cmdtest.Program[Options]{
		Args: Args, Parse: cmdtest.Parser(flags), Flags: flags(new(Options)),
		Defaults: Options{Timeout: DefaultTimeout, ResultFile: inpod.DefaultResultFile},
		Full: Options{
			Endpoints: []string{"https://a:2379", "https://b:2379"}, TLSDir: "/tls", Dir: "/backup", Key: "db/snap",
			Periodic: true, MaxBackups: 3, MaxAge: 48 * time.Hour, Compression: "gzip",
			Timeout: 5 * time.Minute, ResultFile: "/tmp/result",
		},
	})
}

// Missing required flags are reported in the result file with the invalid-spec reason.
func TestRunReportsMissingFlags(t *testing.T) {
	result := cmdtest.ResultFile(t)
	if code := Run(Args(Options{Dir: t.TempDir(), ResultFile: result})); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if reason, msg := cmdtest.ReadResult(t, result); reason != etcdv1beta2.ReasonBackupInvalidSpec || !strings.Contains(msg, "--endpoints") {
		t.Errorf("result %s: %s: want %s naming --endpoints", reason, msg, etcdv1beta2.ReasonBackupInvalidSpec)
	}
}
