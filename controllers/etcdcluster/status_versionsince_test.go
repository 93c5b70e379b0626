package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

func TestRecordVersionSince(t *testing.T) {
	members := func(version, storage string, indexes ...uint64) planner.Observed {
		o := planner.Observed{MembersKnown: true}
		for i, idx := range indexes {
			o.Members = append(o.Members, planner.Member{ID: uint64(i + 1), Reachable: true, Version: version, StorageVersion: storage, RaftIndex: idx})
			o.Pods = append(o.Pods, planner.Pod{Version: version})
		}
		return o
	}
	for _, c := range []struct {
		name string
		st   etcdv1beta2.EtcdClusterStatus
		o    func() planner.Observed
		want *etcdv1beta2.VersionSince
	}{
		{"created here: index 0 on the pods' minor",
			etcdv1beta2.EtcdClusterStatus{BootstrapMembers: []string{"a", "b"}},
			func() planner.Observed { return members("3.6.16", "", 8, 9) },
			&etcdv1beta2.VersionSince{Minor: "3.6"}},
		{"all on 3.6 with storage 3.6 after an upgrade: the highest index",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true, VersionSince: &etcdv1beta2.VersionSince{Minor: "3.5"}},
			func() planner.Observed { return members("3.6.16", "3.6.0", 900, 1200, 1100) },
			&etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 1200}},
		{"storage not yet raised: the 3.5 record stays",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true, VersionSince: &etcdv1beta2.VersionSince{Minor: "3.5"}},
			func() planner.Observed {
				o := members("3.6.16", "3.6.0", 900, 1200, 1100)
				o.Members[1].StorageVersion = "3.5.0"
				return o
			},
			&etcdv1beta2.VersionSince{Minor: "3.5"}},
		{"a member still on 3.5: nothing recorded",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true},
			func() planner.Observed {
				o := members("3.6.16", "", 900, 1200, 1100)
				o.Members[2].Version = "3.5.36"
				return o
			},
			nil},
		{"a member not answering: nothing recorded",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true},
			func() planner.Observed {
				o := members("3.6.16", "3.6.0", 900, 1200, 1100)
				o.Members[0].Reachable = false
				return o
			},
			nil},
		{"a record of the same minor is kept, not moved",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true, VersionSince: &etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50}},
			func() planner.Observed { return members("3.6.16", "3.6.0", 900, 1200, 1100) },
			&etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50}},
		{"restored (log restarted below the record): recorded again at the highest index now",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true, VersionSince: &etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50000},
				BackupRestore: &etcdv1beta2.BackupRestoreStatus{FinishedAt: &metav1.Time{}}},
			func() planner.Observed { return members("3.6.16", "3.6.0", 4, 5, 5) },
			&etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 5}},
		{"restored, storage not yet raised: the stale record stays until it is",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true, VersionSince: &etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50000}},
			func() planner.Observed { return members("3.6.16", "3.5.0", 4, 5, 5) },
			&etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50000}},
		{"during a quorum-loss recovery the seeded member's low index moves nothing",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true, VersionSince: &etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50000},
				Recovery: &etcdv1beta2.RecoveryStatus{Member: "c-0004"}},
			func() planner.Observed { return members("3.6.16", "3.6.0", 3) },
			&etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50000}},
		{"during a restore from backup nothing moves either",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true, VersionSince: &etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50000},
				BackupRestore: &etcdv1beta2.BackupRestoreStatus{Member: "c-0004"}},
			func() planner.Observed { return members("3.6.16", "3.6.0", 3) },
			&etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 50000}},
		{"adopted on 3.6 with no record: its index then",
			etcdv1beta2.EtcdClusterStatus{Bootstrapped: true},
			func() planner.Observed { return members("3.6.16", "3.6.0", 700) },
			&etcdv1beta2.VersionSince{Minor: "3.6", RaftIndex: 700}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := c.st
			recordVersionSince(&st, c.o())
			switch {
			case c.want == nil && st.VersionSince != nil:
				t.Errorf("recorded %+v, want nothing", *st.VersionSince)
			case c.want != nil && (st.VersionSince == nil || *st.VersionSince != *c.want):
				t.Errorf("recorded %+v, want %+v", st.VersionSince, *c.want)
			}
		})
	}
}

func TestPodSnapshotCount(t *testing.T) {
	pod := func(args []string, env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar", Env: []corev1.EnvVar{{Name: "ETCD_SNAPSHOT_COUNT", Value: "7"}}},
			{Name: render.ContainerName, Args: args, Env: env},
		}}}
	}
	withEnvFrom := func(p *corev1.Pod, prefix string) *corev1.Pod {
		p.Spec.Containers[1].EnvFrom = []corev1.EnvFromSource{{Prefix: prefix,
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "knobs"}}}}
		return p
	}
	fromConfigMap := corev1.EnvVar{Name: "ETCD_SNAPSHOT_COUNT", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "knobs"}, Key: "count"}}}
	for _, c := range []struct {
		name   string
		p      *corev1.Pod
		want   uint64
		unread string // a part of the reason; empty: none
	}{
		{"not set", pod(nil), 0, ""},
		{"env value", pod(nil, corev1.EnvVar{Name: "ETCD_SNAPSHOT_COUNT", Value: "200"}), 200, ""},
		{"the argument wins over env", pod([]string{"--snapshot-count=300"}, corev1.EnvVar{Name: "ETCD_SNAPSHOT_COUNT", Value: "200"}), 300, ""},
		{"argument in two words", pod([]string{"--snapshot-count", "400"}), 400, ""},
		{"the last argument wins", pod([]string{"--snapshot-count=400", "--snapshot-count=500"}), 500, ""},
		{"the last env entry wins", pod(nil, corev1.EnvVar{Name: "ETCD_SNAPSHOT_COUNT", Value: "200"}, corev1.EnvVar{Name: "ETCD_SNAPSHOT_COUNT", Value: "250"}), 250, ""},
		{"not a number", pod(nil, corev1.EnvVar{Name: "ETCD_SNAPSHOT_COUNT", Value: "lots"}), 0, "ETCD_SNAPSHOT_COUNT is not a number"},
		{"an argument not a number", pod([]string{"--snapshot-count=$(N)"}), 0, "--snapshot-count argument is not a number"},
		{"valueFrom", pod(nil, fromConfigMap), 0, "ETCD_SNAPSHOT_COUNT is set through valueFrom"},
		{"valueFrom after a value", pod(nil, corev1.EnvVar{Name: "ETCD_SNAPSHOT_COUNT", Value: "200"}, fromConfigMap), 0, "valueFrom"},
		{"envFrom without a prefix", withEnvFrom(pod(nil), ""), 0, "envFrom, which may set ETCD_SNAPSHOT_COUNT"},
		{"envFrom with a prefix of the name", withEnvFrom(pod(nil), "ETCD_"), 0, "envFrom"},
		{"envFrom with another prefix cannot set it", withEnvFrom(pod(nil), "APP_"), 0, ""},
		{"env overrides envFrom", withEnvFrom(pod(nil, corev1.EnvVar{Name: "ETCD_SNAPSHOT_COUNT", Value: "200"}), ""), 200, ""},
	} {
		got, unread := podSnapshotCount(c.p)
		if got != c.want || (c.unread == "") != (unread == "") || !strings.Contains(unread, c.unread) {
			t.Errorf("%s: podSnapshotCount = %d, %q; want %d, %q", c.name, got, unread, c.want, c.unread)
		}
	}
}
