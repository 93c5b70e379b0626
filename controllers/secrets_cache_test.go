package controllers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestGeneratedRBACSecretsNeverListed: the operator's cluster-wide role may read a Secret
// it is told about, never list or watch them all, nor delete or patch one. It may create
// Secrets for etcd auth (the root password Secret) and create and update them for
// built-in certificate issuing (the CA and certificate Secrets of
// a cluster, in its namespace, controlled by it: act_builtintls.go updates only a Secret
// the cluster controls).
func TestGeneratedRBACSecretsNeverListed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(raw), "\n---") {
		var role rbacv1.ClusterRole // a Role has the same shape
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind != "ClusterRole" {
			continue
		}
		for _, r := range role.Rules {
			if !slices.Contains(r.APIGroups, "") || !(slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*")) {
				continue
			}
			found = true
			allowed := []string{"get", "create", "update"}
			if !slices.Contains(r.Verbs, "get") || len(r.ResourceNames) != 0 ||
				slices.ContainsFunc(r.Verbs, func(v string) bool { return !slices.Contains(allowed, v) }) {
				t.Errorf("ClusterRole rule %+v: secrets may be get, create and update only", r)
			}
		}
	}
	if !found {
		t.Error("no ClusterRole rule for secrets; the operator reads TLS and S3 credential Secrets")
	}
}
