package olm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// TestShardGuardAdmission applies config/shard-guard's policy to a real API server: a
// tenant (a user with every right on EtcdClusters, impersonated) may not create a cluster
// with the shard label or annotation, nor set, change or remove either on one (whatever
// the value, "<unset>" too); it may create clusters without them and change everything
// else. An administrator (system:masters) and the operator's service account may set
// them; another service account of the operator's namespace may not. The chart renders
// the same policy for shard.guard.enabled.
func TestShardGuardAdmission(t *testing.T) {
	cfg := startWithChartCRDs(t)
	admin, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	const key = "etcd.database.coreos.com/shard"

	// Tenants (and the operator's service accounts) may do anything to EtcdClusters;
	// only the policy stops them.
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "tenants-admin"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{
			map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "tenants"},
			map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:serviceaccounts:etcd-operator-system"},
		},
	}}
	if _, err := admin.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}).
		Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(user string, groups ...string) dynamic.Interface {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
		d, err := dynamic.NewForConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tenant := as("tenant", "tenants")
	operator := as("system:serviceaccount:etcd-operator-system:etcd-operator-controller-manager",
		"system:serviceaccounts", "system:serviceaccounts:etcd-operator-system")
	neighbour := as("system:serviceaccount:etcd-operator-system:another-operator",
		"system:serviceaccounts", "system:serviceaccounts:etcd-operator-system")

	gvr := func(version string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "etcd.database.coreos.com", Version: version, Resource: "etcdclusters"}
	}
	n := 0
	obj := func(version string, labels, ann map[string]any) *unstructured.Unstructured {
		n++
		meta := map[string]any{"name": fmt.Sprintf("s%d", n), "namespace": "default"}
		if labels != nil {
			meta["labels"] = labels
		}
		if ann != nil {
			meta["annotations"] = ann
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "etcd.database.coreos.com/" + version, "kind": "EtcdCluster",
			"metadata": meta,
			"spec":     map[string]any{"size": int64(1), "version": "3.6.16"},
		}}
	}
	create := func(d dynamic.Interface, version string, labels, ann map[string]any) (*unstructured.Unstructured, error) {
		return d.Resource(gvr(version)).Namespace("default").Create(ctx, obj(version, labels, ann), metav1.CreateOptions{})
	}
	refused := func(err error, field string) error {
		switch {
		case err == nil:
			return fmt.Errorf("accepted; want a refusal naming %s", field)
		case !strings.Contains(err.Error(), field+"["+key+"]"):
			return fmt.Errorf("refusal does not name %s[%s]: %v", field, key, err)
		}
		return nil
	}

	policy := createPolicy(ctx, t, admin, "config/shard-guard/shard_guard.yaml")
	// The policy takes effect a moment after it is created.
	poll.Eventually(t, time.Minute, 200*time.Millisecond, "a tenant's cluster created on a shard refused", func() error {
		_, err := create(tenant, "v1beta2", map[string]any{key: "b"}, nil)
		return refused(err, "metadata.labels")
	})
	for _, version := range []string{"v1beta2", "v1"} {
		if err := refused(func() error { _, err := create(tenant, version, map[string]any{key: "b"}, nil); return err }(), "metadata.labels"); err != nil {
			t.Errorf("%s, a tenant's create with the label: %v", version, err)
		}
		if err := refused(func() error { _, err := create(tenant, version, nil, map[string]any{key: "b"}); return err }(), "metadata.annotations"); err != nil {
			t.Errorf("%s, a tenant's create with the annotation: %v", version, err)
		}
		if _, err := create(tenant, version, map[string]any{"team": "storage"}, nil); err != nil {
			t.Errorf("%s, a tenant's create without the key: %v", version, err)
		}
		if _, err := create(admin, version, map[string]any{key: "b"}, nil); err != nil {
			t.Errorf("%s, an administrator's create with the label: %v", version, err)
		}
		if _, err := create(operator, version, map[string]any{key: "b"}, map[string]any{key: "b"}); err != nil {
			t.Errorf("%s, the operator's create with the label and annotation (a restore): %v", version, err)
		}
		if err := refused(func() error { _, err := create(neighbour, version, map[string]any{key: "b"}, nil); return err }(), "metadata.labels"); err != nil {
			t.Errorf("%s, another service account of the operator's namespace: %v", version, err)
		}
		if err := refused(func() error { _, err := create(tenant, version, nil, map[string]any{key: "<unset>"}); return err }(), "metadata.annotations"); err != nil {
			t.Errorf("%s, a tenant's create with the annotation \"<unset>\": %v", version, err)
		}
	}

	update := func(d dynamic.Interface, name string, change func(labels, ann map[string]string)) error {
		cur, err := admin.Resource(gvr("v1beta2")).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		labels, ann := cur.GetLabels(), cur.GetAnnotations()
		if labels == nil {
			labels = map[string]string{}
		}
		if ann == nil {
			ann = map[string]string{}
		}
		change(labels, ann)
		cur.SetLabels(labels)
		cur.SetAnnotations(ann)
		_, err = d.Resource(gvr("v1beta2")).Namespace("default").Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}
	plain, err := create(tenant, "v1beta2", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := refused(update(tenant, plain.GetName(), func(l, _ map[string]string) { l[key] = "b" }), "metadata.labels"); err != nil {
		t.Errorf("a tenant labels its cluster onto a shard: %v", err)
	}
	if err := refused(update(tenant, plain.GetName(), func(_, a map[string]string) { a[key] = "b" }), "metadata.annotations"); err != nil {
		t.Errorf("a tenant annotates its cluster onto a shard: %v", err)
	}
	if err := update(admin, plain.GetName(), func(l, _ map[string]string) { l[key] = "a" }); err != nil {
		t.Errorf("an administrator moves a cluster: %v", err)
	}
	for name, change := range map[string]func(l, a map[string]string){
		"changes the label":         func(l, _ map[string]string) { l[key] = "b" },
		"removes the label":         func(l, _ map[string]string) { delete(l, key) },
		"sets the label to nothing": func(l, _ map[string]string) { l[key] = "" },
	} {
		if err := refused(update(tenant, plain.GetName(), change), "metadata.labels"); err != nil {
			t.Errorf("a tenant %s of a cluster on a shard: %v", name, err)
		}
	}
	if err := update(tenant, plain.GetName(), func(l, a map[string]string) { l["team"] = "db"; a["note"] = "x" }); err != nil {
		t.Errorf("a tenant changes other labels of a cluster on a shard: %v", err)
	}
	if err := update(admin, plain.GetName(), func(_, a map[string]string) { a[key] = "a" }); err != nil {
		t.Errorf("an administrator annotates a cluster: %v", err)
	}
	for name, change := range map[string]func(l, a map[string]string){
		"removes the annotation":      func(_, a map[string]string) { delete(a, key) },
		"sets the annotation <unset>": func(_, a map[string]string) { a[key] = "<unset>" },
	} {
		if err := refused(update(tenant, plain.GetName(), change), "metadata.annotations"); err != nil {
			t.Errorf("a tenant %s of a cluster on a shard: %v", name, err)
		}
	}

	// The chart's release named the same way: its service account and namespace are the
	// ones config/shard-guard names.
	sameInChartWith(t, map[string]any{
		"shard":          map[string]any{"key": key, "value": "a", "default": true, "guard": map[string]any{"enabled": true}},
		"serviceAccount": map[string]any{"create": true, "name": "etcd-operator-controller-manager"},
	}, policy)
}
