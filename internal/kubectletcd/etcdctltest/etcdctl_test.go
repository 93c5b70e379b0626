// Package etcdctltest checks the etcdctl invocations of kubectl etcd (internal/kubectletcd)
// against a real etcd and etcdctl: the plugin's Execer runs the command it would send
// through pods/exec as a local process, next to an etcd started with the flags the
// member chart gives a TLS member (client certificates required).
package etcdctltest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kfake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/kubectletcd"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/internal/test/testpki"
)

const version = "v3.6.16"

// localExec runs what the plugin would run in the member pod as a local process, with
// the cached etcdctl in place of the image's.
type localExec struct{ etcdctl string }

func (l localExec) Exec(ctx context.Context, _, _, _ string, cmd []string) ([]byte, []byte, error) {
	if cmd[0] != "etcdctl" {
		return nil, nil, os.ErrInvalid
	}
	c := exec.CommandContext(ctx, l.etcdctl, cmd[1:]...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	return out.Bytes(), errOut.Bytes(), err
}

// startTLSMember starts one etcd serving clients over TLS with client-certificate
// authentication on 0.0.0.0:port, as the chart's TLS members do, with a server
// certificate that names only the member's DNS name (not 127.0.0.1). It returns the
// member pod as the chart would render it.
func startTLSMember(t *testing.T) *corev1.Pod {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "kubectl-etcd test CA")
	cert, key := ca.Issue(t, "demo-a", []string{"demo-a.demo.ns.svc"}, nil)
	files := map[string][]byte{"server.crt": cert, "server.key": key, "server-ca.crt": ca.PEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	client, peer := testenv.FreePort(t), testenv.FreePort(t)
	flags := []string{
		"--name=demo-a", "--data-dir=" + filepath.Join(dir, "data"), "--unsafe-no-fsync",
		"--listen-client-urls=https://0.0.0.0:" + strconv.Itoa(client),
		"--advertise-client-urls=https://demo-a.demo.ns.svc:" + strconv.Itoa(client),
		"--listen-peer-urls=http://127.0.0.1:" + strconv.Itoa(peer),
		"--initial-advertise-peer-urls=http://127.0.0.1:" + strconv.Itoa(peer),
		"--initial-cluster=demo-a=http://127.0.0.1:" + strconv.Itoa(peer),
		"--cert-file=" + filepath.Join(dir, "server.crt"), "--key-file=" + filepath.Join(dir, "server.key"),
		"--trusted-ca-file=" + filepath.Join(dir, "server-ca.crt"), "--client-cert-auth=true",
	}
	cmd := exec.Command(etcdtest.Binary(t, version, "etcd"), flags...)
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		testenv.StopProcess(cmd.Process, done, 10*time.Second)
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
			t.Logf("etcd log:\n%s", b)
		}
	})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-a", Namespace: "ns", Labels: map[string]string{"app": "etcd", "etcd_cluster": "demo"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Command: []string{"/usr/local/bin/etcd"}, Args: flags}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func plugin(t *testing.T, pod *corev1.Pod) *kubectletcd.Plugin {
	t.Helper()
	q := resource.MustParse("1Mi")
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 1},
		Status: etcdv1beta2.EtcdClusterStatus{Selector: "app=etcd,etcd_cluster=demo",
			Members: etcdv1beta2.MembersStatus{Leader: "demo-a", Details: []etcdv1beta2.MemberDetail{
				{Name: "demo-a", ID: "1", Role: etcdv1beta2.MemberRoleLeader, DBSize: &q, Healthy: true}}},
			Conditions: []etcdv1beta2.ClusterCondition{{Type: etcdv1beta2.ClusterConditionAvailable, Status: corev1.ConditionTrue}}},
	}
	// The member pod is the cluster's, as the operator makes it: controlled by it.
	c.UID = "demo-uid"
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(c, etcdv1beta2.GroupVersion.WithKind("EtcdCluster"))}
	cl := fake.NewClientBuilder().WithScheme(kubectletcd.Scheme()).WithObjects(c, pod).Build()
	return &kubectletcd.Plugin{C: cl, Logs: kfake.NewClientset(pod.DeepCopy()), Exec: localExec{etcdctl: etcdtest.Binary(t, version, "etcdctl")},
		Namespace: "ns", Out: &bytes.Buffer{}, Now: time.Now, Poll: 100 * time.Millisecond}
}

// Defrag and report reach a TLS member that requires client certificates through the
// loopback listener, with the member's own server certificate as the client's; the
// same pod without the certificate flags is refused by etcd, so the test would notice
// etcdctl connecting another way.
func TestEtcdctlOnATLSMember(t *testing.T) {
	pod := startTLSMember(t)
	p := plugin(t, pod)
	ctx := context.Background()
	var rs []kubectletcd.DefragResult
	// The first attempts may find etcd still starting.
	poll.Eventually(t, 30*time.Second, 200*time.Millisecond, "defrag of the TLS member", func() error {
		var err error
		rs, err = p.Defrag(ctx, "demo", kubectletcd.DefragOptions{Timeout: 20 * time.Second})
		return err
	})
	if len(rs) != 1 || rs[0].Error != "" || rs[0].DBSizeBefore <= 0 || rs[0].DBSizeAfter <= 0 {
		t.Errorf("defrag results %+v", rs)
	}

	dir := filepath.Join(t.TempDir(), "bundle")
	res, err := p.Report(ctx, "demo", kubectletcd.ReportOptions{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Errors {
		if strings.Contains(e, "etcdctl") {
			t.Errorf("report: %s", e)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "etcdctl", "demo-a.endpoint-status.json"))
	if err != nil {
		t.Fatal(err)
	}
	var eps []struct {
		Endpoint string
		Status   struct {
			Version string `json:"version"`
			DBSize  int64  `json:"dbSize"`
		}
	}
	if err := json.Unmarshal(raw, &eps); err != nil || len(eps) != 1 || eps[0].Status.DBSize <= 0 || "v"+eps[0].Status.Version != version {
		t.Errorf("endpoint status %s (%v)", raw, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcdctl", "demo-a.alarm-list.txt")); err != nil {
		t.Error(err)
	}

	// Without the member's certificate etcd refuses the connection.
	bare := pod.DeepCopy()
	var args []string
	for _, a := range bare.Spec.Containers[0].Args {
		if !strings.HasPrefix(a, "--cert-file=") && !strings.HasPrefix(a, "--key-file=") {
			args = append(args, a)
		}
	}
	bare.Spec.Containers[0].Args = args
	if _, err := plugin(t, bare).Defrag(ctx, "demo", kubectletcd.DefragOptions{Timeout: 5 * time.Second}); err == nil {
		t.Error("defrag without a client certificate succeeded against a member that requires one")
	}
}
