package etcdcluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// bootstrapMembers are three members of c bootstrapping a new cluster.
func bootstrapMembers(c *etcdv1beta2.EtcdCluster) []render.Member {
	names := []string{c.Name + "-0000", c.Name + "-0001", c.Name + "-0002"}
	ic := render.InitialCluster(c, names, "")
	var ms []render.Member
	for _, n := range names {
		ms = append(ms, render.Member{Name: n, InitialClusterState: render.StateNew, InitialCluster: ic})
	}
	return ms
}

// TestBootstrapHonoursOnlyTheOperatorsRestore: a cluster's restore annotation is acted on
// only if an EtcdRestore of the same namespace, with the recorded name and UID, names
// this cluster and resolves to that very source; the init container always runs the
// operator's own image. Anything else creates no pod, mounts nothing, and says why.
func TestBootstrapHonoursOnlyTheOperatorsRestore(t *testing.T) {
	genuine := fixture.S3Restore("r1", "restored", "backups/c/snap.db")
	genuine.Spec.S3.Endpoint = "http://minio:9000"
	periodic := fixture.S3Restore("r2", "from-periodic", "backups/c/per")
	elsewhere := fixture.S3Restore("r1", "restored", "backups/c/snap.db")
	elsewhere.Namespace = "other"
	elsewhere.UID = "uid-r1-other"
	pvc := fixture.PVCRestore("r3", "from-pvc", "claim", "snaps/one.db")

	annotate := func(name string, src string) *etcdv1beta2.EtcdCluster {
		return &etcdv1beta2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name), Annotations: map[string]string{
				render.AnnotationRestore:                 src,
				"etcd.database.coreos.com/restore-image": "attacker.example/tool:latest",
			}},
			Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"},
		}
	}
	const s3 = `"s3":{"path":"backups/c/snap.db","awsSecret":"aws","endpoint":"http://minio:9000","forcePathStyle":true}`
	for _, tc := range []struct {
		name, cluster, src string
		wantErr            string // empty: the restore is honoured
	}{
		{"genuine", "restored", `{"restore":"r1","uid":"uid-r1",` + s3 + `}`, ""},
		{"genuine periodic backup", "from-periodic",
			`{"restore":"r2","uid":"uid-r2","s3":{"path":"backups/c/per_v20_2026-01-02-03:04:05","awsSecret":"aws","endpoint":"http://127.0.0.1:1","forcePathStyle":true}}`, ""},
		{"genuine pvc", "from-pvc", `{"restore":"r3","uid":"uid-r3","pvc":{"claimName":"claim","path":"/snaps//one.db"}}`, ""},
		{"no such restore", "restored", `{"restore":"nobody","uid":"uid-nobody",` + s3 + `}`, "not found"},
		{"wrong uid", "restored", `{"restore":"r1","uid":"uid-guessed",` + s3 + `}`, "uid"},
		{"no uid", "restored", `{"restore":"r1",` + s3 + `}`, "uid"},
		{"restore of another cluster", "victim", `{"restore":"r1","uid":"uid-r1",` + s3 + `}`, "victim"},
		{"another secret", "restored", `{"restore":"r1","uid":"uid-r1","s3":{"path":"backups/c/snap.db","awsSecret":"admin-creds","endpoint":"http://minio:9000","forcePathStyle":true}}`, "awsSecret"},
		{"another endpoint", "restored", `{"restore":"r1","uid":"uid-r1","s3":{"path":"backups/c/snap.db","awsSecret":"aws","endpoint":"http://evil:9000","forcePathStyle":true}}`, "endpoint"},
		{"another object", "restored", `{"restore":"r1","uid":"uid-r1","s3":{"path":"backups/other.db","awsSecret":"aws","endpoint":"http://minio:9000","forcePathStyle":true}}`, "path"},
		{"another bucket", "restored", `{"restore":"r1","uid":"uid-r1","s3":{"path":"secrets/c/snap.db","awsSecret":"aws","endpoint":"http://minio:9000","forcePathStyle":true}}`, "path"},
		{"pvc instead of s3", "restored", `{"restore":"r1","uid":"uid-r1","pvc":{"claimName":"claim","path":"x"}}`, "pvc"},
		{"another claim", "from-pvc", `{"restore":"r3","uid":"uid-r3","pvc":{"claimName":"private","path":"snaps/one.db"}}`, "claim"},
		{"malformed", "restored", `{`, render.AnnotationRestore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := annotate(tc.cluster, tc.src)
			s := fixture.Scheme()
			fc := fake.NewClientBuilder().WithScheme(s).WithObjects(c, genuine, periodic, elsewhere, pvc).Build()
			rec := record.NewFakeRecorder(10)
			r := newTestReconciler(t, Reconciler{Client: fc, Scheme: s, Recorder: rec, OperatorImage: "op:configured"})
			err := r.createMembers(context.Background(), c, bootstrapMembers(c))
			var pods corev1.PodList
			if lerr := fc.List(context.Background(), &pods, client.InNamespace("default")); lerr != nil {
				t.Fatal(lerr)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one mentioning %q", err, tc.wantErr)
				}
				if len(pods.Items) != 0 {
					t.Errorf("%d pods created for a restore annotation the operator did not write", len(pods.Items))
				}
				select {
				case ev := <-rec.Events:
					if !strings.Contains(ev, "RestoreSourceRejected") {
						t.Errorf("event %q", ev)
					}
				default:
					t.Errorf("no event on the cluster")
				}
				return
			}
			if err != nil || len(pods.Items) != 3 {
				t.Fatalf("genuine restore: %d pods, %v", len(pods.Items), err)
			}
			for _, p := range pods.Items {
				if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Image != "op:configured" {
					t.Errorf("%s: init containers %+v, want the operator's configured image", p.Name, p.Spec.InitContainers)
				}
			}
		})
	}
}
