package kubectletcd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// fakeExec answers etcdctl in member pods: endpoint status as JSON, the rest "ok";
// fail makes the named pod's commands fail.
type fakeExec struct {
	mu    sync.Mutex
	calls [][]string // pod, then the command
	fail  map[string]bool
}

func (f *fakeExec) Exec(_ context.Context, _, pod, container string, cmd []string) ([]byte, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, append([]string{pod}, cmd...))
	if container != etcdContainer {
		return nil, nil, fmt.Errorf("container %q", container)
	}
	if f.fail[pod] {
		return nil, []byte("Error: context deadline exceeded"), fmt.Errorf("command terminated with exit code 1")
	}
	joined := strings.Join(cmd, " ")
	switch {
	case strings.Contains(joined, "endpoint status"):
		return []byte(`[{"Endpoint":"http://127.0.0.1:2379","Status":{"version":"3.6.16","dbSize":2097152,"dbSizeInUse":1048576,"leader":1,"raftIndex":9,"raftTerm":2}}]`), nil, nil
	case strings.Contains(joined, "alarm list"):
		return nil, nil, nil
	}
	return []byte("Finished defragmenting etcd member[http://127.0.0.1:2379]\n"), nil, nil
}

func (f *fakeExec) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, strings.Join(c, " "))
	}
	return out
}

func qty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

const demoUID = "0c1b2a39-demo"

// ownedBy makes pod one the cluster demo controls, as the operator creates them.
func ownedBy(pod *corev1.Pod, uid types.UID) *corev1.Pod {
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster",
		Name: "demo", UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	return pod
}

// testCluster is a 3-member cluster "demo" whose leader is demo-b.
func testCluster() *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: demoUID},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"},
		Status: etcdv1beta2.EtcdClusterStatus{
			Phase: etcdv1beta2.ClusterPhaseRunning, Size: 3, CurrentVersion: "3.6.16", ClusterID: "abc123",
			Selector: "app=etcd,etcd_cluster=demo",
			Members: etcdv1beta2.MembersStatus{Leader: "demo-b", Details: []etcdv1beta2.MemberDetail{
				{Name: "demo-a", ID: "a1", Role: etcdv1beta2.MemberRoleFollower, Version: "3.6.16", DBSize: qty("2Mi"), DBSizeInUse: qty("1Mi"), Healthy: true},
				{Name: "demo-b", ID: "b2", Role: etcdv1beta2.MemberRoleLeader, Version: "3.6.16", DBSize: qty("2Mi"), DBSizeInUse: qty("1Mi"), Healthy: true},
				{Name: "demo-c", ID: "c3", Role: etcdv1beta2.MemberRoleFollower, Version: "3.6.16", DBSize: qty("2Mi"), DBSizeInUse: qty("1Mi"), Healthy: true},
			}},
			Conditions: []etcdv1beta2.ClusterCondition{
				{Type: etcdv1beta2.ClusterConditionAvailable, Status: corev1.ConditionTrue, Reason: "ClusterAvailable", LastTransitionTime: now.Add(-time.Hour).Format(time.RFC3339)},
				{Type: etcdv1beta2.ClusterConditionSpaceAvailable, Status: corev1.ConditionTrue, Reason: "NoAlarm"},
			},
		},
	}
}

// memberPod is a running member pod of demo (controlled by it), its etcd flags as the
// operator renders them.
func memberPod(name string, tls bool) *corev1.Pod {
	scheme := "http"
	args := []string{"--name=" + name, "--data-dir=/var/etcd/data"}
	if tls {
		scheme = "https"
		args = append(args, "--cert-file=/etc/etcd/server/server.crt", "--key-file=/etc/etcd/server/server.key",
			"--trusted-ca-file=/etc/etcd/server/server-ca.crt", "--client-cert-auth=true")
	}
	args = append(args, "--listen-client-urls="+scheme+"://0.0.0.0:2379")
	return ownedBy(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "etcd", "etcd_cluster": "demo"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: etcdContainer, Command: []string{"/usr/local/bin/etcd"}, Args: args,
			Env: []corev1.EnvVar{
				{Name: "POD_NAME", Value: name},
				{Name: "ETCD_AUTH_TOKEN", Value: "jwt,priv-key=/k,sign-method=RS256"},
				{Name: "FROM_SECRET_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
			},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: etcdContainer, RestartCount: 1}}},
	}, demoUID)
}

// s3Backup is a periodic S3 EtcdBackup of demo.
func s3Backup(name string) *etcdv1beta2.EtcdBackup {
	return &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			ClusterRef:   &etcdv1beta2.EtcdClusterRef{Name: "demo"},
			StorageType:  etcdv1beta2.BackupStorageTypeS3,
			BackupPolicy: &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3600},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{
				Path: "bucket/demo/nightly", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}},
		},
		Status: etcdv1beta2.EtcdBackupStatus{Succeeded: true, EtcdRevision: 42, LastSuccessDate: metav1.NewTime(now.Add(-30 * time.Minute)),
			Conditions: []metav1.Condition{{Type: etcdv1beta2.BackupConditionVerified, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupVerified}}},
	}
}

// testPlugin is a Plugin on fake clients holding objs; secretReads counts every read
// of a Secret's data (a metadata-only read does not count).
type testPlugin struct {
	*Plugin
	out         *bytes.Buffer
	exec        *fakeExec
	secretReads *int
}

func newTestPlugin(t *testing.T, objs ...client.Object) testPlugin {
	t.Helper()
	reads := 0
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}, &etcdv1beta2.EtcdBackup{}, &etcdv1beta2.EtcdRestore{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Secret); ok {
					reads++
				}
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*corev1.SecretList); ok {
					reads++
				}
				return c.List(ctx, list, opts...)
			},
		}).Build()
	var pods []runtime.Object
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p.DeepCopy())
		}
	}
	out := &bytes.Buffer{}
	ex := &fakeExec{fail: map[string]bool{}}
	p := &Plugin{C: c, Logs: kfake.NewClientset(pods...), Exec: ex, Namespace: "ns", Out: out,
		Now: func() time.Time { return now }, Poll: time.Millisecond}
	return testPlugin{Plugin: p, out: out, exec: ex, secretReads: &reads}
}
