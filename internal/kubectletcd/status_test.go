package kubectletcd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The status screen joins etcd's view (details) with the pods: a member without a pod
// and a pod that is no member both show; alarms come from the conditions; only the
// cluster's own backups are listed.
func TestStatusSummarizes(t *testing.T) {
	c := testCluster()
	c.Status.Conditions = append(c.Status.Conditions, etcdv1beta2.ClusterCondition{
		Type: etcdv1beta2.ClusterConditionDataConsistent, Status: corev1.ConditionFalse, Reason: "Corrupt", Message: "member hashes differ"})
	c.Status.Conditions[1].Status, c.Status.Conditions[1].Reason = corev1.ConditionFalse, "NoSpace"
	stray := memberPod("demo-x", false)
	other := s3Backup("other")
	other.Spec.ClusterRef.Name = "another"
	byEndpoint := s3Backup("by-endpoint")
	byEndpoint.Spec.ClusterRef, byEndpoint.Spec.EtcdEndpoints = nil, []string{"http://demo-client.ns.svc:2379"}
	p := newTestPlugin(t, c, memberPod("demo-a", false), memberPod("demo-b", false), stray, s3Backup("nightly"), other, byEndpoint)

	st, err := p.Status(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range st.Members {
		names = append(names, m.Name)
		switch m.Name {
		case "demo-c":
			if m.HasPodObj || !m.InEtcd {
				t.Errorf("demo-c has no pod: %+v", m)
			}
		case "demo-x":
			if m.InEtcd || !m.HasPodObj {
				t.Errorf("demo-x is a pod but no member: %+v", m)
			}
		case "demo-b":
			if m.Role != "Leader" || m.DBSize != "2Mi" || !m.PodReady || m.Restarts != 1 || m.Node != "node-1" {
				t.Errorf("demo-b %+v", m)
			}
		}
	}
	if strings.Join(names, ",") != "demo-a,demo-b,demo-c,demo-x" {
		t.Errorf("members %v", names)
	}
	if len(st.Alarms) != 2 || st.Alarms[0].Alarm != "NOSPACE" || st.Alarms[1].Alarm != "CORRUPT" {
		t.Errorf("alarms %+v", st.Alarms)
	}
	if len(st.Backups) != 2 || st.Backups[0].Name != "by-endpoint" || st.Backups[1].Name != "nightly" {
		t.Fatalf("backups %+v, want by-endpoint and nightly", st.Backups)
	}
	if b := st.Backups[1]; b.Storage != "s3://bucket/demo/nightly" || b.Schedule != "every 1h0m0s" || b.Revision != 42 || b.Verified != "True" {
		t.Errorf("backup summary %+v", b)
	}

	var buf bytes.Buffer
	if err := PrintStatus(&buf, OutputTable, st, now); err != nil {
		t.Fatal(err)
	}
	screen := buf.String()
	for _, want := range []string{"ns/demo", "phase Running", "members 3/3", "leader demo-b", "NOSPACE (NoSpace", "CORRUPT (Corrupt",
		"nightly", "30m ago", "True (BackupVerified)", "not a member", "no pod", "Available", "1h"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	for _, format := range []string{OutputJSON, OutputYAML} {
		buf.Reset()
		if err := PrintStatus(&buf, format, st, now); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "demo-b") {
			t.Errorf("-o %s: %s", format, buf.String())
		}
	}
	buf.Reset()
	_ = PrintStatus(&buf, OutputJSON, st, now)
	var back ClusterStatus
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Members) != 4 || back.Leader != "demo-b" {
		t.Errorf("JSON does not read back: %v %+v", err, back)
	}
}

func TestStatusOfMissingCluster(t *testing.T) {
	p := newTestPlugin(t)
	_, err := p.Status(context.Background(), "nope")
	if err == nil || !strings.Contains(err.Error(), `no EtcdCluster "nope" in namespace "ns"`) {
		t.Errorf("err %v", err)
	}
}

func TestBacksUp(t *testing.T) {
	c := testCluster()
	for _, tc := range []struct {
		ref       string
		endpoints []string
		ns        string
		want      bool
	}{
		{ref: "demo", want: true},
		{ref: "demo2"},
		{endpoints: []string{"http://demo-client:2379"}, want: true},
		{endpoints: []string{"https://demo-client.ns.svc.cluster.local:2379"}, want: true},
		{endpoints: []string{"http://demo-client.other.svc:2379"}},
		{endpoints: []string{"http://demo-a.demo.ns.svc:2379"}, want: true},
		{endpoints: []string{"http://demo-a.demo2.ns.svc:2379"}},
		{endpoints: []string{"http://demo-clientx:2379"}},
		{ref: "demo", ns: "elsewhere"},
	} {
		eb := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: etcdv1beta2.EtcdBackupSpec{EtcdEndpoints: tc.endpoints}}
		if tc.ref != "" {
			eb.Spec.ClusterRef = &etcdv1beta2.EtcdClusterRef{Name: tc.ref}
		}
		if tc.ns != "" {
			eb.Namespace = tc.ns
		}
		if got := backsUp(c, eb); got != tc.want {
			t.Errorf("ref %q endpoints %v ns %q: %t, want %t", tc.ref, tc.endpoints, tc.ns, got, tc.want)
		}
	}
}

func TestMemberListPrints(t *testing.T) {
	p := newTestPlugin(t, testCluster(), memberPod("demo-a", false))
	st, err := p.Status(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := PrintMembers(&buf, OutputTable, st.Members); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "ROLE") || !strings.Contains(lines[2], "Leader") || !strings.Contains(lines[1], "Running") {
		t.Errorf("member table:\n%s", buf.String())
	}
}

// Without permission to list EtcdBackups the screen still shows, saying so.
func TestStatusWithoutBackupPermission(t *testing.T) {
	p := newTestPlugin(t, testCluster())
	p.C = forbidBackups{p.C}
	st, err := p.Status(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := PrintStatus(&buf, OutputTable, st, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Backups:\n  not readable: list EtcdBackups:") || !strings.Contains(buf.String(), "leader demo-b") {
		t.Errorf("screen:\n%s", buf.String())
	}
}

type forbidBackups struct{ client.Client }

func (f forbidBackups) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*etcdv1beta2.EtcdBackupList); ok {
		return apierrors.NewForbidden(schema.GroupResource{Group: "etcd.database.coreos.com", Resource: "etcdbackups"}, "", nil)
	}
	return f.Client.List(ctx, list, opts...)
}
