package olm

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// clusterScopedResources are the resources of the operator's rules that have no
// namespace; everything else can be granted in the watched namespace alone.
var clusterScopedResources = map[string]bool{"nodes": true, "customresourcedefinitions": true, "storageclasses": true,
	"tokenreviews": true, "subjectaccessreviews": true}

// grants expands rules into "group/resource[/name]:verb" triples, sorted.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					for _, v := range r.Verbs {
						out = append(out, fmt.Sprintf("%s/%s/%s:%s", g, res, n, v))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestChartWatchNamespaceRBAC: with watchNamespace the operator's rights on namespaced
// resources (Secrets, Pods, EtcdClusters, ...) are a Role in that namespace; the
// ClusterRole keeps only the cluster-scoped ones (Nodes, the CRDs' caBundle, StorageClasses). Together
// they grant exactly what config/rbac/role.yaml's ClusterRole grants.
func TestChartWatchNamespaceRBAC(t *testing.T) {
	const release = "etcd-operator-system"
	r, err := renderChart(t, map[string]any{"watchNamespace": "team-a"}, "etcd-operator", release)
	if err != nil {
		t.Fatal(err)
	}
	sa := one[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding").Subjects
	cr := one[rbacv1.ClusterRole](t, r, "ClusterRole")
	for _, rule := range cr.Rules {
		for _, res := range rule.Resources {
			if !clusterScopedResources[res] {
				t.Errorf("ClusterRole grants namespaced %s %v cluster-wide", res, rule.Verbs)
			}
		}
	}
	var watched []*rbacv1.Role
	for _, role := range all[rbacv1.Role](t, r, "Role") {
		if role.Namespace == "team-a" {
			watched = append(watched, role)
		}
	}
	if len(watched) != 1 {
		t.Fatalf("%d Roles in the watched namespace, want 1", len(watched))
	}
	bound := false
	for _, rb := range all[rbacv1.RoleBinding](t, r, "RoleBinding") {
		if rb.Namespace == "team-a" && rb.RoleRef.Kind == "Role" && rb.RoleRef.Name == watched[0].Name && reflect.DeepEqual(rb.Subjects, sa) {
			bound = true
		}
	}
	if !bound {
		t.Errorf("no RoleBinding in team-a binds Role %s to %v", watched[0].Name, sa)
	}
	got := grants(append(append([]rbacv1.PolicyRule{}, cr.Rules...), watched[0].Rules...))
	if want := grants(configClusterRoleRules(t)); !reflect.DeepEqual(got, want) {
		t.Errorf("ClusterRole + team-a Role grant\n %v\nconfig's ClusterRole grants\n %v", got, want)
	}
}

// TestChartOwnSecretsByName: the release namespace's Role reads and updates only the
// operator's own Secrets by name (the webhook certificate's name follows the release),
// and creates Secrets (create cannot be limited by name); with the webhook off the
// restore-pin key's rules remain.
func TestChartOwnSecretsByName(t *testing.T) {
	for _, tc := range []struct {
		release string
		webhook bool
		want    []string
	}{
		{"other", true, []string{"/secrets/:create", "/secrets/etcd-operator-restore-pin-key:get", "/secrets/other-webhook-service-cert:get", "/secrets/other-webhook-service-cert:update"}},
		{"etcd-operator", false, []string{"/secrets/:create", "/secrets/etcd-operator-restore-pin-key:get", "/secrets/etcd-operator-webhook-service-cert:get", "/secrets/etcd-operator-webhook-service-cert:update"}},
	} {
		r, err := renderChart(t, map[string]any{"webhook": map[string]any{"enabled": tc.webhook}}, tc.release, "ops")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, role := range all[rbacv1.Role](t, r, "Role") {
			for _, g := range grants(role.Rules) {
				if strings.Contains(g, "/secrets/") {
					got = append(got, g)
				}
			}
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("release %s, webhook %v: Secret grants %v, want %v", tc.release, tc.webhook, got, tc.want)
		}
	}
}
