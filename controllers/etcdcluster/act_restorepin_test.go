package etcdcluster

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestRestorePinRenderedOnlyWhenSigned: the members of a cluster restored by an
// EtcdRestore of an EtcdBackup get --checks-passed-for-pin only when the signature the
// annotation carries is the operator's, over that EtcdBackup (its current UID) and
// exactly the object and SHA-256 rendered. A forged, stale, copied or missing signature,
// or an operator without its key, still creates every member (the checks run) and
// never fails the restore; a signature that does not verify is reported in an event.
func TestRestorePinRenderedOnlyWhenSigned(t *testing.T) {
	key := bytes.Repeat([]byte{9}, 32)
	sha := strings.Repeat("ab", 32)
	const objKey, revision = "c/per_v20_2026-12-01-10:00:00", int64(20)
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default", UID: "uid-nightly"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: etcdv1beta2.BackupSource{
			S3: &etcdv1beta2.S3BackupSource{Path: "backups/c/per", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}}},
	}
	sign := func(edit func(*etcdv1beta2.EtcdBackup)) string {
		b := eb.DeepCopy()
		if edit != nil {
			edit(b)
		}
		return pinsign.Sign(key, pinsign.BackupFacts(b, objKey, sha, revision))
	}
	genuine := sign(nil)
	for _, tc := range []struct {
		name      string
		sig       string
		revision  int64
		noKey     bool
		want      bool
		wantEvent bool
	}{
		{name: "signed by the operator's verification", sig: genuine, revision: revision, want: true},
		{name: "no signature", revision: revision},
		{name: "forged", sig: strings.Repeat("0f", 32), revision: revision, wantEvent: true},
		{name: "another revision claimed", sig: genuine, revision: revision + 1, wantEvent: true},
		{name: "copied from another namespace", sig: sign(func(b *etcdv1beta2.EtcdBackup) { b.Namespace = "other" }), revision: revision, wantEvent: true},
		{name: "stale: an earlier EtcdBackup of the name", sig: sign(func(b *etcdv1beta2.EtcdBackup) { b.UID = "uid-earlier" }), revision: revision, wantEvent: true},
		{name: "another EtcdBackup's", sig: sign(func(b *etcdv1beta2.EtcdBackup) { b.Name = "hourly" }), revision: revision, wantEvent: true},
		{name: "signed for another endpoint", sig: sign(func(b *etcdv1beta2.EtcdBackup) { b.Spec.S3.Endpoint = "http://other:9000" }), revision: revision, wantEvent: true},
		{name: "the operator has no key", sig: genuine, revision: revision, noKey: true, wantEvent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := render.RestoreSource{Restore: "r1", UID: "uid-r1", SHA256: sha, PinSignature: tc.sig, PinRevision: tc.revision,
				S3: &etcdv1beta2.S3BackupSource{Path: "backups/" + objKey, AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}}
			c := restoredCluster(t, "restored", "uid-restored", src)
			er := nightlyRestoreOf(t, c)
			s := fixture.Scheme()
			fc := fake.NewClientBuilder().WithScheme(s).WithObjects(c, er, eb.DeepCopy()).Build()
			events := record.NewFakeRecorder(10)
			r := newTestReconciler(t, Reconciler{Client: fc, Scheme: s, Recorder: events, OperatorImage: "op:configured", PinKey: key})
			if tc.noKey {
				r.PinKey = nil
			}
			if err := r.createMembers(context.Background(), c, bootstrapMembers(c)); err != nil {
				t.Fatalf("the restore failed: %v", err)
			}
			var pods corev1.PodList
			if err := fc.List(context.Background(), &pods, client.InNamespace("default")); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 3 {
				t.Fatalf("%d pods, want the 3 members restoring", len(pods.Items))
			}
			for _, p := range pods.Items {
				args := p.Spec.InitContainers[0].Args
				if got := slices.Contains(args, "--checks-passed-for-pin"); got != tc.want {
					t.Errorf("%s: --checks-passed-for-pin %v, want %v: %q", p.Name, got, tc.want, args)
				}
				if !slices.Contains(args, "--checksum="+sha) {
					t.Errorf("%s: not pinned: %q", p.Name, args)
				}
			}
			gotEvent := false
			for len(events.Events) > 0 {
				if ev := <-events.Events; strings.Contains(ev, ReasonRestorePinNotTrusted) {
					gotEvent = true
				}
			}
			if gotEvent != tc.wantEvent {
				t.Errorf("%s event: %v, want %v", ReasonRestorePinNotTrusted, gotEvent, tc.wantEvent)
			}
		})
	}
}
