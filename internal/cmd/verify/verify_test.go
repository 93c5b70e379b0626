package verify

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/cmd/cmdtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
)

// parseStep parses a step's flags as Run does after the subcommand and the step.
func parseStep(step string) func([]string) (string, RestoreOptions, CheckOptions, error) {
	return func(args []string) (string, RestoreOptions, CheckOptions, error) {
		var w strings.Builder
		got, r, c, ok := parse(&w, append([]string{step}, args...))
		if !ok {
			return got, r, c, errors.New(w.String())
		}
		return got, r, c, nil
	}
}

// parseOnly parses step's flags and keeps, by pick, the options of that step; args parsed
// as another step are an error.
func parseOnly[O any](step string, pick func(RestoreOptions, CheckOptions) O) func([]string) (O, error) {
	p := parseStep(step)
	return func(args []string) (O, error) {
		got, r, c, err := p(args)
		if err == nil && got != step {
			err = errors.New("parsed as step " + got)
		}
		return pick(r, c), err
	}
}

func TestRestoreFlagsRoundTrip(t *testing.T) {
	cmdtest.RoundTrip(t, cmdtest.Program[RestoreOptions]{
		Args: RestoreArgs, Skip: 1, Flags: restoreFlags(new(RestoreOptions)),
		Parse: parseOnly(RestoreStep, func(r RestoreOptions, _ CheckOptions) RestoreOptions { return r }),
		Defaults: RestoreOptions{Source: inpod.Source{AWSSecretDir: inpod.DefaultAWSSecretDir}, Name: DefaultName, PeerURL: DefaultPeerURL,
			Timeout: DefaultRestoreTimeout, ResultFile: inpod.DefaultResultFile},
		Full: RestoreOptions{
			Source: inpod.Source{
				S3Path: "b/k", S3Endpoint: "http://minio:9000", S3ForcePathStyle: true, AWSSecretDir: "/aws", S3Ambient: true,
				EncryptionKeyFile: "/key/key", Dir: "/backup", Key: "db/snap", Latest: true,
				BackupNamespace: "ns", BackupName: "nightly", BackupRevision: 42,
			},
			Name: "v", DataDir: "/var/etcd/data", PeerURL: "http://127.0.0.1:12380", ExpectFile: "/expect/expect.json",
			Timeout: time.Minute, ResultFile: "/tmp/result",
		},
	})
	if a := RestoreArgs(RestoreOptions{}); len(a) != 1 || a[0] != RestoreStep {
		t.Errorf("zero options render %q, want only the step", a)
	}
}

func TestCheckFlagsRoundTrip(t *testing.T) {
	cmdtest.RoundTrip(t, cmdtest.Program[CheckOptions]{
		Args: CheckArgs, Skip: 1, Flags: checkFlags(new(CheckOptions)),
		Parse:    parseOnly(CheckStep, func(_ RestoreOptions, c CheckOptions) CheckOptions { return c }),
		Defaults: CheckOptions{Endpoint: DefaultEndpoint, Timeout: DefaultCheckTimeout, ResultFile: inpod.DefaultResultFile},
		Full:     CheckOptions{Endpoint: "http://127.0.0.1:12379", ExpectFile: "/expect/expect.json", Timeout: time.Minute, ResultFile: "/tmp/result"},
	})
}

// No step, or an unknown one, is refused with exit code 2 and one line naming the steps.
func TestRunRefusesUnknownStep(t *testing.T) {
	for _, args := range [][]string{nil, {"snapshots"}} {
		var w strings.Builder
		if _, _, _, ok := parse(&w, args); ok || strings.Count(w.String(), "\n") != 1 || !strings.Contains(w.String(), "restore") {
			t.Errorf("%q: ok %v, report %q", args, ok, w.String())
		}
		if code := Run(args); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
	}
}
