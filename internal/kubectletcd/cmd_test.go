package kubectletcd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// run runs the command tree on p with args; conn receives the connection flags.
func run(p *Plugin, conn *ConnOptions, args ...string) (string, error) {
	var errOut bytes.Buffer
	out := p.Out.(*bytes.Buffer)
	out.Reset()
	cmd := NewCommand(func(o ConnOptions, _ io.Writer) (*Plugin, error) {
		if conn != nil {
			*conn = o
		}
		return p, nil
	}, out, &errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// The kubectl-style flags reach the connection, before or after the subcommand.
func TestConnectionFlags(t *testing.T) {
	p := newTestPlugin(t, testCluster())
	var conn ConnOptions
	if _, err := run(p.Plugin, &conn, "--kubeconfig", "/k", "--context", "ctx", "status", "demo", "-n", "ns"); err != nil {
		t.Fatal(err)
	}
	if conn != (ConnOptions{Kubeconfig: "/k", Context: "ctx", Namespace: "ns"}) {
		t.Errorf("connection options %+v", conn)
	}
	if _, err := run(p.Plugin, &conn, "member", "list", "demo", "--namespace=other"); err != nil || conn.Namespace != "other" {
		t.Errorf("--namespace=other: %+v %v", conn, err)
	}
}

// Bad arguments are refused before anything is read, naming what is wrong.
func TestArgumentErrors(t *testing.T) {
	p := newTestPlugin(t, testCluster(), s3Backup("nightly"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "status takes one EtcdCluster name, got 0"},
		{[]string{"status", "a", "b"}, "got 2 arguments"},
		{[]string{"member", "list"}, "member list takes one EtcdCluster name"},
		{[]string{"status", "demo", "-o", "xml"}, `-o/--output: "xml" is not one of json, yaml`},
		{[]string{"restore", "new"}, "--from BACKUP is required"},
		{[]string{"restore", "new", "--from", "nightly", "--at", "yesterday"}, `--at "yesterday": want an RFC 3339 time`},
		{[]string{"restore", "new", "--from", "nope"}, "--from nope: no EtcdBackup of that name in namespace ns"},
		{[]string{"restore", "demo", "--from", "nightly"}, "EtcdCluster demo exists: restore into a new name, or give --replace"},
		{[]string{"backup", "demo", "--backup", "nope"}, "--backup nope: no EtcdBackup of that name backs up cluster demo (its backups: nightly)"},
		{[]string{"backup", "demo", "--one-shot", "--s3-secret", "aws"}, "--s3-secret, --s3-endpoint and --pvc-path need --s3-path or --pvc-claim"},
		{[]string{"defrag", "nope"}, `no EtcdCluster "nope"`},
		{[]string{"backup", "demo", "--size", "3"}, "unknown flag: --size"},
	} {
		_, err := run(p.Plugin, nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
	if n := len(p.exec.commands()); n != 0 {
		t.Errorf("refused commands ran %d execs", n)
	}
}

func TestOutputFormats(t *testing.T) {
	p := newTestPlugin(t, testCluster(), memberPod("demo-a", false))
	for format, want := range map[string]string{"": "Members:", "table": "Members:", "json": `"leader": "demo-b"`, "yaml": "leader: demo-b"} {
		args := []string{"status", "demo"}
		if format != "" {
			args = append(args, "-o", format)
		}
		out, err := run(p.Plugin, nil, args...)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("-o %q: %v\n%s", format, err, out)
		}
	}
}

// Backup, restore and defrag print how far they got also when they fail, and report that
// failure rather than a printing error; a failure before anything was done prints nothing.
func TestPrintedAnyway(t *testing.T) {
	failed, printing := errors.New("failed"), errors.New("printing")
	for _, tc := range []struct {
		name        string
		rs          []DefragResult
		err, perr   error
		want        error
		wantPrinted bool
	}{
		{"nothing done", nil, failed, nil, failed, false},
		{"done, then failed", []DefragResult{{}}, failed, printing, failed, true},
		{"done", []DefragResult{{}}, nil, nil, nil, true},
		{"done, printing failed", []DefragResult{{}}, nil, printing, printing, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			printed := false
			print := func(io.Writer, string, []DefragResult) error { printed = true; return tc.perr }
			if got := printedAnyway(io.Discard, "", print)(tc.rs, tc.err); got != tc.want || printed != tc.wantPrinted {
				t.Errorf("got %v, printed %v; want %v, printed %v", got, printed, tc.want, tc.wantPrinted)
			}
		})
	}
}
