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

// TestGeneratedRBACSecretsGetOnly: the operator's cluster-wide role may read a Secret it
// is told about, never list or watch them all.
func TestGeneratedRBACSecretsGetOnly(t *testing.T) {
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
			if len(r.Verbs) != 1 || r.Verbs[0] != "get" || len(r.ResourceNames) != 0 {
				t.Errorf("ClusterRole rule %+v: secrets must be get only", r)
			}
		}
	}
	if !found {
		t.Error("no ClusterRole rule for secrets; the operator reads TLS and S3 credential Secrets")
	}
}
