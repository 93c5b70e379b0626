package render

import (
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// TestValidateClusterRefusesIdentityEnv: a variable in spec.pod.etcdEnv is an etcd flag,
// so the ones that fork, rejoin, move or weaken a cluster are refused, naming the
// variable, whether or not the cluster uses TLS; tuning variables stay allowed.
func TestValidateClusterRefusesIdentityEnv(t *testing.T) {
	refused := []string{
		"ETCD_FORCE_NEW_CLUSTER", "ETCD_UNSAFE_NO_FSYNC", "ETCD_UNSAFE_ANYTHING_NEW",
		"ETCD_DISCOVERY", "ETCD_DISCOVERY_SRV", "ETCD_DISCOVERY_ENDPOINTS", "ETCD_DISCOVERY_TOKEN",
		"ETCD_INITIAL_CLUSTER", "ETCD_INITIAL_CLUSTER_STATE", "ETCD_INITIAL_CLUSTER_TOKEN",
		"ETCD_INITIAL_ADVERTISE_PEER_URLS", "ETCD_ADVERTISE_CLIENT_URLS",
		"ETCD_NAME", "ETCD_DATA_DIR", "ETCD_WAL_DIR", "ETCD_CONFIG_FILE",
		"ETCD_LISTEN_PEER_URLS", "ETCD_LISTEN_CLIENT_URLS", "ETCD_LISTEN_CLIENT_HTTP_URLS", "ETCD_LISTEN_METRICS_URLS",
		"ETCD_STRICT_RECONFIG_CHECK", "ETCD_PROXY",
		"ETCD_AUTO_TLS", "ETCD_PEER_AUTO_TLS", "ETCD_CLIENT_CERT_AUTH", "ETCD_PEER_CLIENT_CERT_AUTH",
		"ETCD_PEER_SKIP_CLIENT_SAN_VERIFICATION", "ETCD_EXPERIMENTAL_PEER_SKIP_CLIENT_SAN_VERIFICATION",
		"ETCD_CERT_FILE", "ETCD_KEY_FILE", "ETCD_TRUSTED_CA_FILE",
		"ETCD_PEER_CERT_FILE", "ETCD_PEER_KEY_FILE", "ETCD_PEER_TRUSTED_CA_FILE",
		"POD_IP", "POD_NAME",
		// allowlist: logging targets, profiling, TLS policy, exposure, auth, tracing,
		// and whatever etcd adds later
		"ETCD_LOG_OUTPUTS", "ETCD_ENABLE_PPROF", "ETCD_PEER_CERT_ALLOWED_CN", "ETCD_PEER_CERT_ALLOWED_HOSTNAME",
		"ETCD_CLIENT_CERT_ALLOWED_CN", "ETCD_CIPHER_SUITES", "ETCD_TLS_MIN_VERSION", "ETCD_CLIENT_CRL_FILE",
		"ETCD_ENABLE_V2", "ETCD_EXPERIMENTAL_ENABLE_DISTRIBUTED_TRACING",
		"ETCD_EXPERIMENTAL_DISTRIBUTED_TRACING_ADDRESS", "ETCD_HOST_WHITELIST", "ETCD_SOMETHING_NEW",
		// outside ETCD_*: what changes how the runtime trusts or routes connections
		"GODEBUG", "HTTPS_PROXY", "http_proxy", "SSL_CERT_FILE",
	}
	allowed := []string{
		"ETCD_QUOTA_BACKEND_BYTES", "ETCD_AUTO_COMPACTION_RETENTION", "ETCD_SNAPSHOT_COUNT",
		"ETCD_HEARTBEAT_INTERVAL", "ETCD_ELECTION_TIMEOUT", "ETCD_LOG_LEVEL",
		"ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK", "ETCD_FEATURE_GATES", "ETCD_MAX_LEARNERS",
		"etcd_force_new_cluster", // etcd only reads upper-case names
		"GOMAXPROCS", "GOMEMLIMIT", "TZ",
		"ETCD_MAX_REQUEST_BYTES", "ETCD_GRPC_KEEPALIVE_TIMEOUT", "ETCD_LOG_FORMAT", "ETCD_CORRUPT_CHECK_TIME",
	}
	for _, withTLS := range []bool{false, true} {
		cluster := func(env corev1.EnvVar) *v1beta2.EtcdCluster {
			c := coreosSample("3.6.16")
			if withTLS {
				c = tlsCluster("p", "s")
			}
			c.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_LOG_LEVEL", Value: "info"}, env}}
			return c
		}
		for _, name := range refused {
			// valueFrom hides the value, never the name.
			env := corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}
			err := ValidateCluster(cluster(env))
			if err == nil || !strings.Contains(err.Error(), "spec.pod.etcdEnv: "+name+" ") {
				t.Errorf("TLS=%v: %s: err = %v, want a refusal naming spec.pod.etcdEnv and %s", withTLS, name, err, name)
			}
		}
		for _, name := range allowed {
			if err := ValidateCluster(cluster(corev1.EnvVar{Name: name, Value: "1"})); err != nil {
				t.Errorf("TLS=%v: %s refused: %v", withTLS, name, err)
			}
		}
	}
}

// Every flag the chart passes on etcd's command line is forbidden as a variable, so the
// list cannot fall behind the chart.
func TestForbiddenEnvCoversRenderedFlags(t *testing.T) {
	forbidden := map[string]bool{}
	for _, n := range ForbiddenEnvNames() {
		forbidden[n] = true
	}
	for _, c := range []*v1beta2.EtcdCluster{coreosSample("3.6.16"), tlsCluster("p", "s")} {
		for _, n := range ReservedEnv(c) {
			if !forbidden[n] {
				t.Errorf("%s is set by the chart but not in ForbiddenEnvNames", n)
			}
		}
	}
}

// A retired variable is refused as reserved, and the chart really no longer sets it
// (else it belongs in ownEnv, with the message that the operator sets it).
func TestRetiredEnvStaysRefused(t *testing.T) {
	for _, name := range retiredEnv {
		for _, c := range []*v1beta2.EtcdCluster{coreosSample("3.6.16"), tlsCluster("p", "s")} {
			got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, "")})
			for _, e := range etcdContainer(t, got.pods["example-0000"]).Env {
				if e.Name == name {
					t.Errorf("%s is rendered but listed as retired", name)
				}
			}
			c.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: name, Value: "10.0.0.1"}}}
			if err := ValidateCluster(c); err == nil || !strings.Contains(err.Error(), name+" is reserved") {
				t.Errorf("%s: err = %v, want it refused as reserved", name, err)
			}
		}
	}
}

// The CRDs' admission rule on spec.pod.etcdEnv (v1 pod.env) is exactly EnvRuleCEL, so
// admission and reconciling refuse the same names.
func TestEnvRuleMarkersMatch(t *testing.T) {
	for _, f := range []string{"../../api/v1beta2/etcdcluster_types.go", "../../api/v1/etcdcluster_types.go"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("+kubebuilder:validation:items:XValidation:rule=%q,messageExpression=%q", EnvRuleCEL(), EnvRuleMessageCEL)
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s: the env rule marker is not EnvRuleCEL; want\n\t// %s", f, want)
		}
	}
	// Every allowed name is one the Go side allows, and none is one it refuses.
	for _, n := range AllowedEtcdEnv() {
		if why := forbiddenEnv(n); why != "" {
			t.Errorf("%s is allowed by the rule but %s", n, why)
		}
	}
}
