package inpod

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// A bad flag of an in-pod program is reported as one line naming the flag, without the
// usage banner that crowded the cause out of the pod's termination message.
func TestPodFlagErrorIsOneLineNamingTheFlag(t *testing.T) {
	fs := FlagSet("backup")
	fs.Duration("max-age", 0, "keep backups this long")
	fs.Duration("timeout", time.Minute, "give up after this long")
	var out strings.Builder
	if Parse(&out, fs, []string{"--timeout=1m", "--max-age=forever"}) {
		t.Fatal("a bad duration was accepted")
	}
	got := out.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, "max-age") || strings.Contains(got, "Usage") || strings.Contains(got, "give up") {
		t.Errorf("report %q: want one line naming -max-age, no usage banner", got)
	}
	out.Reset()
	if !Parse(&out, fs, []string{"--max-age=1h"}) || out.Len() != 0 {
		t.Errorf("good flags: reported %q", out.String())
	}
}

// The source flags round-trip on their own (the programs' tests cover them again inside
// their Options).
func TestSourceRoundTrip(t *testing.T) {
	full := Source{
		S3Path: "b/k", S3Endpoint: "http://minio:9000", S3ForcePathStyle: true, AWSSecretDir: "/aws", S3Ambient: true,
		EncryptionKeyFile: "/key/key", Dir: "/backup", Key: "db/snap", Latest: true,
		BackupNamespace: "ns", BackupName: "nightly", BackupRevision: 42,
	}
	var got Source
	fs := FlagSet("test")
	got.Register(fs, "dir", "latest")
	if err := fs.Parse(full.Args()); err != nil {
		t.Fatal(err)
	}
	if got != full {
		t.Errorf("%q parse to %+v, want %+v", full.Args(), got, full)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if len(full.Args()) != n {
		t.Errorf("%d flags defined, %d rendered: %q", n, len(full.Args()), full.Args())
	}
	// Nothing set renders nothing, and parses to the defaults.
	if a := (Source{}).Args(); len(a) != 0 {
		t.Errorf("zero source renders %q", a)
	}
	if s3, dir := full.Given(); !s3 || !dir {
		t.Errorf("Given() = %v, %v", s3, dir)
	}
}
