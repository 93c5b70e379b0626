package etcdbackup

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// countingListener stands in for team-b's etcd member: it counts the connections made to it.
func countingListener(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	accepted = &atomic.Int32{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	return l.Addr().String(), accepted
}

// TestBackupCannotReachAnotherNamespace: a tenant of team-a names team-b's cluster, by
// its endpoints or by reference. The backup is refused with a reason naming the field,
// and nothing is dialled.
func TestBackupCannotReachAnotherNamespace(t *testing.T) {
	addr, accepted := countingListener(t)
	host, _, _ := net.SplitHostPort(addr)
	victim := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-b", UID: "victim-uid"}}
	own := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a", UID: "own-uid"}}
	aws := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "team-a"}, Data: map[string][]byte{
		"credentials": []byte("[default]\naws_access_key_id = a\naws_secret_access_key = b\n")}}

	backupOf := func(name string, mutate func(*etcdv1beta2.EtcdBackupSpec)) *etcdv1beta2.EtcdBackup {
		eb := &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Generation: 1},
			Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: etcdv1beta2.BackupSource{
				S3: &etcdv1beta2.S3BackupSource{Path: "bucket/k", AWSSecret: "aws", Endpoint: "http://127.0.0.1:1", ForcePathStyle: true}},
				BackupPolicy: &etcdv1beta2.BackupPolicy{TimeoutInSecond: 2}},
		}
		mutate(&eb.Spec)
		return eb
	}
	cases := []refusal{
		{backupOf("by-ip", func(s *etcdv1beta2.EtcdBackupSpec) { s.EtcdEndpoints = []string{"http://" + addr} }),
			etcdv1beta2.ReasonEndpointsRefused, "spec.etcdEndpoints"},
		{backupOf("by-name", func(s *etcdv1beta2.EtcdBackupSpec) {
			s.EtcdEndpoints = []string{"http://prod-client.team-b.svc:" + strings.Split(addr, ":")[1]}
		}), etcdv1beta2.ReasonEndpointsRefused, "spec.etcdEndpoints"},
		{backupOf("by-member-name", func(s *etcdv1beta2.EtcdBackupSpec) {
			s.EtcdEndpoints = []string{"http://prod-0001.prod.team-b.svc.cluster.local:2379"}
		}), etcdv1beta2.ReasonEndpointsRefused, "spec.etcdEndpoints"},
		{backupOf("by-ref", func(s *etcdv1beta2.EtcdBackupSpec) { s.ClusterRef = &etcdv1beta2.EtcdClusterRef{Name: "prod"} }),
			etcdv1beta2.ReasonClusterNotFound, "spec.clusterRef.name"},
	}

	objs := []client.Object{victim, own, aws, memberPodOf(victim, "prod-0001", host), memberPodOf(own, "mine-0001", "10.1.1.1")}
	checkRefusals(t, objs, cases, accepted, nil)
}

// Status must not tell refused from timed out from TLS for endpoints the user chose
// freely (external, allowed by the operator flag); for a cluster of the namespace it does.
func TestDialFailureHidesDetailForExternalEndpoints(t *testing.T) {
	ctx := context.Background()
	causes := map[string]error{
		etcdv1beta2.ReasonSnapshotFailed: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")},
		etcdv1beta2.ReasonTimeout:        errors.New("backup did not finish within 3s: context deadline exceeded"),
		etcdv1beta2.ReasonTLSError:       errors.New("TLS with the etcd members failed: x509: certificate signed by unknown authority"),
	}
	var external []string
	for reason, cause := range causes {
		err := dialFailure(ctx, &backupTarget{Endpoints: []string{"http://10.9.9.9:22"}}, reason, cause)
		be, ok := err.(*backupstorage.Error)
		if !ok || be.Reason != etcdv1beta2.ReasonSnapshotFailed {
			t.Fatalf("%s: %v, want reason %s", reason, err, etcdv1beta2.ReasonSnapshotFailed)
		}
		external = append(external, be.Err.Error())
		own := dialFailure(ctx, &backupTarget{Cluster: "mine"}, reason, cause).(*backupstorage.Error)
		if own.Reason != reason || !strings.Contains(own.Err.Error(), cause.Error()) {
			t.Errorf("own cluster: %s %q, want %s with the cause", own.Reason, own.Err, reason)
		}
	}
	for _, m := range external {
		if m != external[0] || strings.Contains(m, "10.9.9.9") {
			t.Errorf("external failures read differently or name the endpoint: %q", external)
		}
	}
}

// refusal is a backup that must fail before its cluster is dialled: Succeeded=False for
// reason, with a message (status.reason too) naming naming.
type refusal struct {
	backup         *etcdv1beta2.EtcdBackup
	reason, naming string
}

// checkRefusals reconciles each case's backup once on a fake API serving objs and the
// backups, and checks that it failed as the case says and that nothing reached the
// cluster's listener (accepted); also, when not nil, checks more of each condition. It
// returns the recorder of the events.
func checkRefusals(t *testing.T, objs []client.Object, cases []refusal, accepted *atomic.Int32, also func(*testing.T, *metav1.Condition)) *record.FakeRecorder {
	t.Helper()
	for _, c := range cases {
		objs = append(objs, c.backup)
	}
	c := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(objs...).WithStatusSubresource(&etcdv1beta2.EtcdBackup{}).Build()
	rec := record.NewFakeRecorder(100)
	r := &Reconciler{Client: c, APIReader: c, Recorder: rec, Now: time.Now,
		failures: map[client.ObjectKey]int{}, retryAt: map[client.ObjectKey]retryState{}, S3Access: testS3Access}
	for _, tc := range cases {
		// Failed attempts are counted in the process-wide metrics other tests read.
		t.Cleanup(func() { forgetBackupMetrics(tc.backup.Namespace, tc.backup.Name) })
		t.Run(tc.backup.Name, func(t *testing.T) {
			ctx := context.Background()
			_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.backup)})
			var got etcdv1beta2.EtcdBackup
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.backup), &got); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != tc.reason {
				t.Fatalf("condition %+v, want Succeeded=False %s", cond, tc.reason)
			}
			if !strings.Contains(cond.Message, tc.naming) || got.Status.Reason != cond.Message {
				t.Errorf("message %q (status.Reason %q) should name %s", cond.Message, got.Status.Reason, tc.naming)
			}
			if also != nil {
				also(t, cond)
			}
			if n := accepted.Load(); n != 0 {
				t.Errorf("the cluster was dialled %d times", n)
			}
		})
	}
	return rec
}
