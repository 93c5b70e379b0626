package render

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func withSettings(kv ...string) *v1beta2.EtcdCluster {
	c := coreosSample("3.6.16")
	c.Annotations = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Annotations[kv[i]] = kv[i+1]
	}
	return c
}

// The settings reach every member's etcd as the variables etcd reads for its flags, in
// the order quota, mode, retention, before the user's own variables.
func TestSettingsRenderedAsEnv(t *testing.T) {
	c := withSettings(
		v1beta2.QuotaBackendBytesAnnotation, "4294967296",
		v1beta2.AutoCompactionModeAnnotation, "revision",
		v1beta2.AutoCompactionRetentionAnnotation, "1000",
	)
	c.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_LOG_LEVEL", Value: "warn"}}}
	r := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 3, "")})
	for _, p := range r.pods {
		var got []string
		for _, e := range etcdContainer(t, p).Env {
			got = append(got, e.Name+"="+e.Value)
		}
		want := "POD_NAME= ETCD_QUOTA_BACKEND_BYTES=4294967296 ETCD_AUTO_COMPACTION_MODE=revision ETCD_AUTO_COMPACTION_RETENTION=1000 ETCD_LOG_LEVEL=warn"
		if strings.Join(got, " ") != want {
			t.Errorf("pod %s env = %v, want %s", p.Name, got, want)
		}
	}
	if q := QuotaBackendBytes(c); q != 4294967296 {
		t.Errorf("QuotaBackendBytes = %d", q)
	}

	// None set: no variable, and the pods are what they were before settings existed.
	plain := coreosSample("3.6.16")
	for _, p := range mustRender(t, Input{Cluster: plain, Members: bootstrap(plain, 1, "")}).pods {
		if env := etcdContainer(t, p).Env; len(env) != 1 || env[0].Name != "POD_NAME" {
			t.Errorf("env without settings = %v", env)
		}
	}
	if q := QuotaBackendBytes(plain); q != v1beta2.DefaultQuotaBackendBytes {
		t.Errorf("default quota = %d", q)
	}
	plain.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "8589934592"}}}
	if q := QuotaBackendBytes(plain); q != 8589934592 {
		t.Errorf("quota from etcdEnv = %d", q)
	}
}

// Invalid settings are refused by ValidateCluster (hence InvalidSpec) naming the
// annotation; valid ones pass.
func TestSettingsValidation(t *testing.T) {
	q, m, r := v1beta2.QuotaBackendBytesAnnotation, v1beta2.AutoCompactionModeAnnotation, v1beta2.AutoCompactionRetentionAnnotation
	valid := [][]string{
		{q, "1048576"}, {q, "68719476736"}, {q, ""},
		{m, "periodic"}, {m, "revision"},
		{r, "0"}, {r, "1"}, {r, "30m"}, {r, "1h30m"}, {r, "1.5h"},
		{m, "periodic", r, "72"}, {m, "revision", r, "10000"},
	}
	for _, kv := range valid {
		if err := ValidateCluster(withSettings(kv...)); err != nil {
			t.Errorf("%v refused: %v", kv, err)
		}
	}
	invalid := []struct {
		kv   []string
		name string // the annotation named in the error
	}{
		{[]string{q, "1048575"}, q},
		{[]string{q, "68719476737"}, q},
		{[]string{q, "-1"}, q},
		{[]string{q, "2Gi"}, q},
		{[]string{m, "Periodic"}, m},
		{[]string{m, "none"}, m},
		{[]string{r, "30 minutes"}, r},
		{[]string{r, "-1h"}, r},
		{[]string{m, "revision", r, "1h"}, r},
	}
	for _, tc := range invalid {
		err := ValidateCluster(withSettings(tc.kv...))
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%v: err = %v, want a refusal naming %s", tc.kv, err, tc.name)
		}
	}

	// The same variable in etcdEnv and as a setting: refused, naming both.
	c := withSettings(q, "4294967296")
	c.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"}}}
	if err := ValidateCluster(c); err == nil || !strings.Contains(err.Error(), "ETCD_QUOTA_BACKEND_BYTES") || !strings.Contains(err.Error(), q) {
		t.Errorf("setting and etcdEnv both: err = %v", err)
	}
}
