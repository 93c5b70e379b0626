package kubectletcd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tenantPods carry demo's member labels but are not the cluster's: one with no owner,
// one owned (not controlled) by demo, one controlled by another object of the same
// name (a deleted and recreated EtcdCluster demo, say). demo-c is named after a member
// whose real pod is missing.
func tenantPods() []*corev1.Pod {
	noOwner := memberPod("demo-c", false)
	noOwner.OwnerReferences = nil
	notController := memberPod("demo-t", false)
	notController.OwnerReferences[0].Controller = nil
	otherUID := ownedBy(memberPod("demo-u", false), "another-uid")
	return []*corev1.Pod{noOwner, notController, otherUID}
}

func TestMemberPodsOnlyControlledByTheCluster(t *testing.T) {
	objs := []client.Object{testCluster(), memberPod("demo-a", false), memberPod("demo-b", false)}
	for _, p := range tenantPods() {
		objs = append(objs, p)
	}

	t.Run("status", func(t *testing.T) {
		p := newTestPlugin(t, objs...)
		st, err := p.Status(context.Background(), "demo")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(st.IgnoredPods, ",") != "demo-c,demo-t,demo-u" {
			t.Errorf("ignored %v", st.IgnoredPods)
		}
		for _, m := range st.Members {
			if m.HasPodObj && m.Name != "demo-a" && m.Name != "demo-b" {
				t.Errorf("a pod the cluster does not control is shown as a member pod: %+v", m)
			}
		}
		out, err := run(p.Plugin, nil, "status", "demo")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "ignored (member labels, but not controlled by this EtcdCluster): demo-c, demo-t, demo-u") {
			t.Errorf("status screen does not name the ignored pods:\n%s", out)
		}
	})

	t.Run("defrag", func(t *testing.T) {
		p := newTestPlugin(t, objs...)
		_, _ = run(p.Plugin, nil, "defrag", "demo")
		for _, c := range p.exec.commands() {
			if pod := strings.Fields(c)[0]; pod != "demo-a" && pod != "demo-b" {
				t.Errorf("exec into %s: %s", pod, c)
			}
		}
		if len(p.exec.commands()) == 0 {
			t.Error("defrag ran nothing in the cluster's own pods")
		}
	})

	t.Run("report", func(t *testing.T) {
		p := newTestPlugin(t, objs...)
		path := filepath.Join(t.TempDir(), "r.tar.gz")
		if _, err := run(p.Plugin, nil, "report", "demo", "-f", path); err != nil {
			t.Fatal(err)
		}
		for _, c := range p.exec.commands() {
			if pod := strings.Fields(c)[0]; pod != "demo-a" && pod != "demo-b" {
				t.Errorf("exec into %s: %s", pod, c)
			}
		}
		files := untar(t, path)
		for name := range files {
			for _, tenant := range []string{"demo-c", "demo-t", "demo-u"} {
				if strings.Contains(name, tenant) {
					t.Errorf("bundle holds %s of a pod the cluster does not control", name)
				}
			}
		}
		if !strings.Contains(string(files["status.yaml"]), "ignoredPods:\n- demo-c\n- demo-t\n- demo-u") {
			t.Errorf("status.yaml does not list the ignored pods:\n%s", files["status.yaml"])
		}
		if pods := string(files["pods.yaml"]); strings.Contains(pods, "name: demo-t") {
			t.Errorf("pods.yaml holds a tenant pod")
		}
	})
}
