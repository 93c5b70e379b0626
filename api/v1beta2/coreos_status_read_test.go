package v1beta2_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CoreOS's operator always wrote status.succeeded, true or false, and scripts read it
// as such. Status written by a merge patch that leaves succeeded at false never sends
// the field (the patch carries only what changed), so the stored object lacks it unless
// the schema defaults it on every read: before any status write, after a failure written
// as a patch of Reason alone, and after a success.
func TestV1beta2ReadsAlwaysCarrySucceeded(t *testing.T) {
	c := startAPIServer(t)
	ctx := context.Background()
	docs := map[string]string{
		"EtcdBackup": `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdBackup
metadata: {name: coreos-script}
spec: {etcdEndpoints: ["http://x:2379"], storageType: S3, s3: {path: b/k, awsSecret: a}}`,
		"EtcdRestore": `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdRestore
metadata: {name: coreos-script}
spec: {etcdCluster: {name: c}, backupStorageType: S3, s3: {path: b/k, awsSecret: a}}`,
	}
	failure := map[string]string{"EtcdBackup": `{"status":{"Reason":"failed to save snapshot"}}`,
		"EtcdRestore": `{"status":{"reason":"backup not found"}}`}
	for kind, doc := range docs {
		t.Run(kind, func(t *testing.T) {
			u := objectFromYAML(t, doc)
			if err := c.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			wantSucceeded(t, c, u, false, "before any status write")
			patch := client.RawPatch(types.MergePatchType, []byte(failure[kind]))
			if err := c.Status().Patch(ctx, u.DeepCopy(), patch); err != nil {
				t.Fatal(err)
			}
			wantSucceeded(t, c, u, false, "after a failure patched as its reason alone")
			patch = client.RawPatch(types.MergePatchType, []byte(`{"status":{"succeeded":true}}`))
			if err := c.Status().Patch(ctx, u.DeepCopy(), patch); err != nil {
				t.Fatal(err)
			}
			wantSucceeded(t, c, u, true, "after a success")
		})
	}
}

func wantSucceeded(t *testing.T, c client.Client, obj *unstructured.Unstructured, want bool, when string) {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	v, found, err := unstructured.NestedBool(got.Object, "status", "succeeded")
	if err != nil || !found || v != want {
		t.Errorf("%s: status.succeeded = %v (present %v, err %v), want %v present; status %v",
			when, v, found, err, want, got.Object["status"])
	}
}
