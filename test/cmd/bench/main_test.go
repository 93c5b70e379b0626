package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// envRunMain makes the test binary act as the bench command, so the test drives the real
// main (namespace re-exec and kubelet shim included) without a separate go build.
const envRunMain = "BENCH_CMD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func benchCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envRunMain+"=1")
	return cmd
}

// TestUpExecFaultDown runs `bench up` as a separate process and uses it from the host
// network namespace the way a person would: kubeconfig through the proxy, exec into
// the namespaces, a fault over the control socket, and down.
func TestUpExecFaultDown(t *testing.T) {
	if missing := bench.MissingBinaries(); len(missing) > 0 {
		testenv.Missing(t, "bench binaries missing: %v", missing)
	}
	if bench.InNamespace() {
		t.Fatal("this test must start in the host namespaces")
	}
	dir := t.TempDir()
	before := snapshotMachine(t)
	up := benchCmd("up", "--dir", dir, "--nodes", "2")
	var out bytes.Buffer
	up.Stdout, up.Stderr = &out, &out
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- up.Wait() }()
	t.Cleanup(func() {
		// Whatever happened, the bench must be gone: SIGTERM the namespaced child by pid
		// file, then SIGKILL the process we started.
		_ = benchCmd("down", "--dir", dir, "--grace", "30s").Run()
		select {
		case <-exited:
		case <-time.After(40 * time.Second):
			_ = up.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("bench up output:\n%s", out.String())
		}
	})

	// The cleanup above prints bench up's output if this fails. The bound is generous: on a
	// loaded two-core machine (end-to-end shards beside this test) bringing up the
	// control plane, images, nodes and cluster DNS has taken over two minutes.
	poll.Eventually(t, 6*time.Minute, 200*time.Millisecond, "bench up's pid file", func() error {
		_, err := os.Stat(filepath.Join(dir, "pid"))
		if err != nil {
			select {
			case err := <-exited:
				exited <- err // for the cleanup, which waits for it
				t.Fatalf("bench up exited early: %v\n%s", err, out.String())
			default:
			}
		}
		return err
	})

	// From the host: the kubeconfig reaches the apiserver through the proxy.
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metavListAll)
	if err != nil {
		t.Fatalf("list nodes from the host: %v", err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("got %d nodes from the host, want 2", len(nodes.Items))
	}

	// From the host: the registry proxy reaches the bench's registry (the pause image the
	// nodes run is there), and what is pushed through it can be pulled back.
	reg, err := os.ReadFile(filepath.Join(dir, "registry"))
	if err != nil {
		t.Fatal(err)
	}
	regAddr := strings.TrimSpace(string(reg))
	pause, err := ociimage.PullAnonymous(context.Background(), regAddr+"/pause:3.10")
	if err != nil {
		t.Fatalf("pull the bench's pause image from the host through %s: %v", regAddr, err)
	}
	if err := ociimage.Push(regAddr+"/pushed-from-host:v1", pause); err != nil {
		t.Fatalf("push through %s: %v", regAddr, err)
	}
	if _, err := ociimage.PullAnonymous(context.Background(), regAddr+"/pushed-from-host:v1"); err != nil {
		t.Fatalf("pull back what the host pushed: %v", err)
	}

	// exec runs inside the bench's mount namespace: it resolves with cluster DNS.
	ex := benchCmd("exec", "--dir", dir, "--", "cat", "/etc/resolv.conf")
	resolv, err := ex.CombinedOutput()
	if err != nil {
		t.Fatalf("bench exec: %v\n%s", err, resolv)
	}
	if !strings.Contains(string(resolv), "nameserver "+bench.ClusterDNSIP) {
		t.Errorf("bench exec did not see the bench resolv.conf:\n%s", resolv)
	}
	// The cached etcd tools are on PATH inside.
	if msg, err := benchCmd("exec", "--dir", dir, "--", "etcdctl", "version").CombinedOutput(); err != nil || !strings.Contains(string(msg), "3.7.3") {
		t.Errorf("bench exec etcdctl version: %v\n%s", err, msg)
	}
	// The exit code passes through.
	if err := benchCmd("exec", "--dir", dir, "--", "sh", "-c", "exit 7").Run(); exitCode(err) != 7 {
		t.Errorf("bench exec exit code = %v, want 7", err)
	}

	// A fault over the control socket takes effect in the cluster.
	if msg, err := benchCmd("fault", "--dir", dir, "node-down", "bench-node-2").CombinedOutput(); err != nil {
		t.Fatalf("bench fault: %v\n%s", err, msg)
	}
	if msg, err := benchCmd("fault", "--dir", dir, "node-down", "no-such-node").CombinedOutput(); err == nil {
		t.Errorf("fault on an unknown node succeeded: %s", msg)
	}
	poll.Eventually(t, 45*time.Second, 200*time.Millisecond, "bench-node-2 Ready=Unknown", func() error {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), "bench-node-2", metavGet)
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status != corev1.ConditionUnknown {
					return fmt.Errorf("Ready=%s", c.Status)
				}
				return nil
			}
		}
		return fmt.Errorf("no Ready condition")
	})

	// down stops it: the up process exits 0 and leaves no pid file.
	raw, _ := os.ReadFile(filepath.Join(dir, "pid"))
	if msg, err := benchCmd("down", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("bench down: %v\n%s", err, msg)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Errorf("bench up exited with %v after down", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("bench up still running 60s after down")
	}
	if _, err := os.Stat(filepath.Join(dir, "pid")); err == nil {
		t.Error("pid file left behind")
	}
	var pid int
	fmt.Sscan(string(raw), &pid)
	if pid > 0 && syscall.Kill(pid, 0) == nil {
		t.Errorf("bench process %d still alive", pid)
	}
	// The machine is as it was: real nodes ran, and nothing of them is left.
	after := snapshotMachine(t)
	for _, d := range before.diff(after) {
		t.Errorf("the bench changed the machine: %s", d)
	}
	for _, l := range benchLeftovers(pid, dir) {
		t.Errorf("the bench left behind: %s", l)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}

var (
	metavListAll = metav1.ListOptions{}
	metavGet     = metav1.GetOptions{}
)
