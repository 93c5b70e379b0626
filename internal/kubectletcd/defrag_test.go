package kubectletcd

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// etcdctl in a member reaches that member on loopback with the pod's own client port
// and, for TLS, its server certificate.
func TestEtcdctlArgs(t *testing.T) {
	plain, err := etcdctlBase(memberPod("demo-a", false))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plain, " "); got != "etcdctl --endpoints=http://127.0.0.1:2379 --command-timeout=10s --dial-timeout=5s" {
		t.Errorf("plain: %s", got)
	}
	tls, err := etcdctlBase(memberPod("demo-a", true))
	if err != nil {
		t.Fatal(err)
	}
	want := "etcdctl --endpoints=https://127.0.0.1:2379 --command-timeout=10s --dial-timeout=5s --insecure-transport=false " +
		"--insecure-skip-tls-verify=true --cert=/etc/etcd/server/server.crt --key=/etc/etcd/server/server.key"
	if got := strings.Join(tls, " "); got != want {
		t.Errorf("TLS:\n%s\nwant\n%s", got, want)
	}
	odd := memberPod("demo-a", false)
	odd.Spec.Containers[0].Args = append(odd.Spec.Containers[0].Args, "--listen-client-urls=http://0.0.0.0:3379")
	if a, _ := etcdctlBase(odd); a[1] != "--endpoints=http://127.0.0.1:3379" {
		t.Errorf("port from the flags: %v", a)
	}
	noEtcd := memberPod("demo-a", false)
	noEtcd.Spec.Containers[0].Name = "other"
	if _, err := etcdctlBase(noEtcd); err == nil {
		t.Error("a pod without the etcd container gave etcdctl arguments")
	}
}

// Followers are defragmented first and the leader last; each member's etcdctl runs in
// its own pod.
func TestDefragOrderAndResults(t *testing.T) {
	p := newTestPlugin(t, testCluster(), memberPod("demo-a", false), memberPod("demo-b", false), memberPod("demo-c", false))
	out, err := run(p.Plugin, nil, "defrag", "demo")
	if err != nil {
		t.Fatal(err)
	}
	var defragged []string
	for _, c := range p.exec.commands() {
		if strings.HasSuffix(c, " defrag") {
			defragged = append(defragged, strings.Fields(c)[0])
		}
	}
	if strings.Join(defragged, ",") != "demo-a,demo-c,demo-b" {
		t.Errorf("defragmented %v, want followers then the leader demo-b", defragged)
	}
	if !strings.Contains(out, "demo-b   Leader     2.0MiB      2.0MiB     1.0MiB   defragmented") {
		t.Errorf("output:\n%s", out)
	}
}

// The first failure stops the run: the leader is not defragmented after a follower
// failed.
func TestDefragStopsAtFailure(t *testing.T) {
	p := newTestPlugin(t, testCluster(), memberPod("demo-a", false), memberPod("demo-b", false), memberPod("demo-c", false))
	p.exec.fail["demo-a"] = true
	_, err := run(p.Plugin, nil, "defrag", "demo")
	if err == nil || !strings.Contains(err.Error(), "defragmentation of demo-a failed") {
		t.Errorf("err %v", err)
	}
	for _, c := range p.exec.commands() {
		if !strings.HasPrefix(c, "demo-a ") {
			t.Errorf("ran %q after demo-a failed", c)
		}
	}
}

func TestDefragRefusals(t *testing.T) {
	unhealthy := testCluster()
	unhealthy.Status.Members.Details[2].Healthy = false
	running := testCluster()
	running.Status.Maintenance = &etcdv1beta2.MaintenanceStatus{Run: &etcdv1beta2.MaintenanceRun{Trigger: "Schedule", StartedAt: metav1.NewTime(now)}}
	unavailable := testCluster()
	unavailable.Status.Conditions[0].Status = corev1.ConditionFalse
	auth := testCluster()
	auth.Annotations = map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
	for name, tc := range map[string]struct {
		c       *etcdv1beta2.EtcdCluster
		force   bool
		wantErr string
	}{
		"unhealthy":         {c: unhealthy, wantErr: "member demo-c is not healthy (--force"},
		"unhealthy, forced": {c: unhealthy, force: true},
		"maintenance run":   {c: running, wantErr: "Schedule maintenance run started 2026-12-06T12:00:00Z is in progress"},
		"not available":     {c: unavailable, wantErr: "not Available"},
		"auth, even forced": {c: auth, force: true, wantErr: "never reads nor passes through pods/exec"},
	} {
		t.Run(name, func(t *testing.T) {
			p := newTestPlugin(t, tc.c, memberPod("demo-a", false), memberPod("demo-b", false), memberPod("demo-c", false))
			_, err := p.Defrag(context.Background(), "demo", DefragOptions{Force: tc.force})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if n := len(p.exec.commands()); n != 0 {
				t.Errorf("refused defrag ran %d execs", n)
			}
		})
	}
}

func TestDefragSkipsMembersWithoutPods(t *testing.T) {
	p := newTestPlugin(t, testCluster(), memberPod("demo-a", false), memberPod("demo-b", false))
	rs, err := p.Defrag(context.Background(), "demo", DefragOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[2].Member != "demo-c" || !strings.Contains(rs[2].Error, "skipped: no running pod") || rs[1].Member != "demo-b" {
		t.Errorf("results %+v", rs)
	}
}
