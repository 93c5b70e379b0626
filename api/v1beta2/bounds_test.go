package v1beta2_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/etcd-operator/etcd-operator/internal/render"
)

// TestClusterIdentityAndBoundsAdmission: on a real API server, in both served versions,
// the env list refuses every variable the operator refuses when reconciling (the same
// names and prefixes, whatever the value or valueFrom), naming the field and the
// variable, and every number of an EtcdCluster has a maximum.
func TestClusterIdentityAndBoundsAdmission(t *testing.T) {
	c := startAPIServer(t)
	ctx := context.Background()
	n := 0
	create := func(version string, spec map[string]any) error {
		n++
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "etcd.database.coreos.com/" + version, "kind": "EtcdCluster",
			"metadata": map[string]any{"name": fmt.Sprintf("c%d", n), "namespace": "default"},
			"spec":     spec,
		}}
		return c.Create(ctx, u)
	}
	envField := map[string]string{"v1beta2": "etcdEnv", "v1": "env"}
	withEnv := func(version string, env ...map[string]any) map[string]any {
		list := []any{map[string]any{"name": "ETCD_LOG_LEVEL", "value": "info"}}
		for _, e := range env {
			list = append(list, e)
		}
		return map[string]any{"size": int64(3), "pod": map[string]any{envField[version]: list}}
	}
	refused := func(t *testing.T, err error, subs ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("accepted; want a refusal naming %v", subs)
		}
		if !apierrors.IsInvalid(err) {
			t.Fatalf("want an Invalid error, got %v", err)
		}
		for _, s := range subs {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error does not name %s: %v", s, err)
			}
		}
	}

	var forbidden []string
	forbidden = append(forbidden, render.ForbiddenEnvNames()...)
	for _, p := range render.ForbiddenEnvPrefixes() {
		forbidden = append(forbidden, p, strings.TrimSuffix(p, "_")+"_SOMETHING_NEW")
	}
	// ETCD_* is an allowlist: log outputs, pprof, TLS policy and flags unknown today are
	// refused too; outside ETCD_*, what changes how the runtime trusts or routes.
	forbidden = append(forbidden, "ETCD_LOG_OUTPUTS", "ETCD_ENABLE_PPROF", "ETCD_PEER_CERT_ALLOWED_CN", "ETCD_CIPHER_SUITES",
		"ETCD_SOMETHING_NEW")
	forbidden = append(forbidden, render.DeniedOtherEnv()...)
	for _, version := range []string{"v1beta2", "v1"} {
		field := "spec.pod." + envField[version]
		t.Run(version, func(t *testing.T) {
			for _, name := range forbidden {
				refused(t, create(version, withEnv(version, map[string]any{"name": name, "value": "x"})), field, name)
			}
			// valueFrom hides the value, never the name.
			refused(t, create(version, withEnv(version, map[string]any{"name": "ETCD_FORCE_NEW_CLUSTER",
				"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}})), field, "ETCD_FORCE_NEW_CLUSTER")
			for _, name := range append(render.AllowedEtcdEnv(), "GOMAXPROCS", "TZ") {
				if err := create(version, withEnv(version, map[string]any{"name": name, "value": "1"})); err != nil {
					t.Errorf("%s refused: %v", name, err)
				}
			}
			long := make([]map[string]any, 256)
			for i := range long {
				long[i] = map[string]any{"name": fmt.Sprintf("X%d", i), "value": "1"}
			}
			refused(t, create(version, withEnv(version, long...)), field)

			refused(t, create(version, map[string]any{"size": int64(1_000_000_000)}), "spec.size")
			refused(t, create(version, map[string]any{"size": int64(100)}), "spec.size")
			if err := create(version, map[string]any{"size": int64(99)}); err != nil {
				t.Errorf("size 99 refused: %v", err)
			}
		})
	}

	pod := func(k string, v any) map[string]any {
		return map[string]any{"size": int64(3), "pod": map[string]any{k: v}}
	}
	refused(t, create("v1beta2", pod("DNSTimeoutInSecond", int64(86401))), "spec.pod.DNSTimeoutInSecond")
	refused(t, create("v1beta2", pod("DNSTimeoutInSecond", int64(1)<<62)), "spec.pod.DNSTimeoutInSecond")
	refused(t, create("v1", pod("dnsTimeout", "25h")), "spec.pod.dnsTimeout")
	refused(t, create("v1", pod("dnsTimeout", "100000000h")), "spec.pod.dnsTimeout")
	// The cluster domain ends up in every member host the operator dials: a user, port,
	// path or fragment would point those connections elsewhere.
	for _, bad := range []string{"x@10.0.0.1:443#", "cluster.local:6443", "a/b", "a#b", "UPPER.case"} {
		refused(t, create("v1beta2", pod("ClusterDomain", bad)), "spec.pod.ClusterDomain")
		refused(t, create("v1", pod("clusterDomain", bad)), "spec.pod.clusterDomain")
	}
	for _, ok := range []struct {
		version string
		spec    map[string]any
	}{{"v1beta2", pod("ClusterDomain", "cluster.local")}, {"v1", pod("clusterDomain", "cluster.local.")},
		{"v1beta2", pod("DNSTimeoutInSecond", int64(86400))}, {"v1", pod("dnsTimeout", "24h")}, {"v1", pod("dnsTimeout", "0s")}} {
		if err := create(ok.version, ok.spec); err != nil {
			t.Errorf("%s %v refused: %v", ok.version, ok.spec, err)
		}
	}
}
