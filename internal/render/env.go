package render

import (
	"fmt"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// etcd reads every command-line flag also from the environment, as ETCD_<FLAG> with the
// flag upper-cased and "-" turned into "_". A variable in spec.pod.etcdEnv is therefore a
// flag, and some flags would let whoever may edit an EtcdCluster fork the cluster, make a
// member join some other cluster, move or drop its data, or weaken its TLS, behind the
// operator's back. So ETCD_* names are an allowlist (allowedEtcdFlags), enforced at
// admission (the CRDs' CEL rule on the env list is EnvRuleCEL; a test keeps the markers
// equal to it, and api/v1beta2 checks it on a real API server) and when reconciling, for
// objects stored before the rule existed. The lists below name the refused flags the
// operator explains specifically.

// operatorFlags are the flags the member chart passes on etcd's command line, TLS ones
// included whether or not this cluster uses TLS: the operator alone decides a member's
// name, data directory, URLs, initial cluster and certificates.
var operatorFlags = []string{
	"name", "data-dir", "listen-peer-urls", "listen-client-urls", "listen-metrics-urls",
	"initial-advertise-peer-urls", "advertise-client-urls", "initial-cluster",
	"initial-cluster-state", "initial-cluster-token",
	"peer-cert-file", "peer-key-file", "peer-trusted-ca-file", "peer-client-cert-auth",
	"cert-file", "key-file", "trusted-ca-file", "client-cert-auth",
}

// unsafeFlags change what a member is or how safely it stores and authenticates data,
// beyond the flags the chart sets. Each entry says why.
var unsafeFlags = []string{
	"force-new-cluster",       // turns a member into a new one-member cluster: a fork
	"config-file",             // a config file makes etcd ignore every flag and variable
	"wal-dir",                 // a WAL outside the data volume is lost when the pod is
	"listen-client-http-urls", // extra listeners the operator does not know or secure
	"strict-reconfig-check",   // =false lets a membership change break quorum
	"auto-tls",                // self-signed certificates nobody verifies
	"peer-auto-tls",           // the same for peers
	"peer-skip-client-san-verification",
	"experimental-peer-skip-client-san-verification",
}

// unsafePrefixes cover families of flags: discovery joins a member to a cluster found
// elsewhere, initial-cluster* is the operator's bootstrap, unsafe-* (e.g. unsafe-no-fsync)
// trades durability away, and proxy* (etcd < 3.6) turns a member into a proxy.
var unsafePrefixes = []string{"ETCD_DISCOVERY", "ETCD_INITIAL_CLUSTER", "ETCD_UNSAFE_", "ETCD_PROXY"}

// ownEnv are the variables the chart sets on the etcd container.
var ownEnv = []string{"POD_NAME"}

// retiredEnv were the chart's own variables once and stay reserved. POD_IP held the pod
// IP the listeners bound to until they took the unspecified address (see the chart's
// pods.yaml); nothing refers to it now. It stays refused because the CRDs' admission
// rule has always refused it: accepting it now would let objects be stored that a later
// chart needing the pod IP again could only refuse, breaking clusters that exist.
var retiredEnv = []string{"POD_IP"}

// allowedEtcdFlags are the only etcd flags spec.pod.etcdEnv may set (as ETCD_<FLAG>): an
// allowlist, so a flag etcd adds later is refused until it is known to be harmless.
// Each tunes how a member runs and none can change what it is (name, cluster, URLs,
// data or WAL location), where it logs or sends traces (log outputs, tracing), its TLS
// policy (certificates, allowed CNs or hostnames, cipher suites, versions, CRLs), or
// expose more (pprof, the v2 API, extra listeners, host whitelist). Both names etcd
// 3.5 (experimental-*) and 3.6 (graduated) read are listed.
var allowedEtcdFlags = []string{
	// storage size and compaction
	"quota-backend-bytes", "auto-compaction-mode", "auto-compaction-retention",
	"backend-batch-limit", "backend-batch-interval", "backend-bbolt-freelist-type",
	"snapshot-count", "max-snapshots", "max-wals",
	"experimental-compaction-batch-limit", "compaction-batch-limit",
	"experimental-compaction-sleep-interval", "compaction-sleep-interval",
	"experimental-bootstrap-defrag-threshold-megabytes", "bootstrap-defrag-threshold-megabytes",
	"experimental-snapshot-catchup-entries", "snapshot-catchup-entries",
	// raft timing
	"heartbeat-interval", "election-timeout", "pre-vote",
	"experimental-max-learners", "max-learners",
	// request limits and gRPC keepalive
	"max-request-bytes", "max-txn-ops", "max-concurrent-streams",
	"grpc-keepalive-min-time", "grpc-keepalive-interval", "grpc-keepalive-timeout",
	// logging level and format (not its outputs), metrics detail
	"log-level", "log-format", "metrics",
	// consistency checks and other safe tuning
	"experimental-initial-corrupt-check", "experimental-corrupt-check-time", "corrupt-check-time",
	"experimental-compact-hash-check-enabled", "experimental-compact-hash-check-time", "compact-hash-check-time",
	"experimental-watch-progress-notify-interval", "watch-progress-notify-interval",
	"experimental-warning-apply-duration", "warning-apply-duration",
	"experimental-warning-unary-request-duration", "warning-unary-request-duration",
	"experimental-enable-lease-checkpoint", "experimental-enable-lease-checkpoint-persist",
	"experimental-memory-mlock", "memory-mlock",
	"experimental-txn-mode-write-with-shared-buffer",
	"experimental-stop-grpc-service-on-defrag",
	"experimental-downgrade-check-time", "downgrade-check-time",
	"feature-gates",
	// etcd's own client authentication tokens (the operator does not use etcd auth)
	"auth-token", "auth-token-ttl", "bcrypt-cost",
}

// deniedOtherEnv are variables outside etcd's ETCD_* that still change how etcd's Go
// runtime trusts or routes connections: GODEBUG re-enables weak TLS (e.g. tlsrsakex,
// x509sha1), the proxy variables route peer traffic through a proxy (etcd's transport
// honours them), SSL_CERT_* replace the trusted roots. Any other name is the image's own
// business: etcd ignores names without the ETCD_ prefix.
var deniedOtherEnv = []string{
	"GODEBUG", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// AllowedEtcdEnv lists, as declared, every ETCD_* name spec.pod.etcdEnv may set; the
// CRDs' CEL rule (EnvRuleCEL) holds the same.
func AllowedEtcdEnv() []string {
	out := make([]string, 0, len(allowedEtcdFlags))
	for _, f := range allowedEtcdFlags {
		out = append(out, envName(f))
	}
	return out
}

// DeniedOtherEnv lists the names without the ETCD_ prefix that spec.pod.etcdEnv may not
// set besides the operator's own (ForbiddenEnvNames).
func DeniedOtherEnv() []string { return append([]string{}, deniedOtherEnv...) }

// EnvRuleCEL is the CEL rule on each item of spec.pod.etcdEnv (v1 pod.env) that the CRDs
// declare; a test keeps the markers equal to it.
func EnvRuleCEL() string {
	quote := func(names []string) string {
		q := make([]string, len(names))
		for i, n := range names {
			q[i] = "'" + n + "'"
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	var other []string
	for _, n := range append(append([]string{}, retiredEnv...), ownEnv...) {
		other = append(other, n)
	}
	other = append(other, deniedOtherEnv...)
	return "self.name.startsWith('ETCD_') ? self.name in " + quote(AllowedEtcdEnv()) + " : !(self.name in " + quote(other) + ")"
}

// EnvRuleMessageCEL is the rule's messageExpression.
const EnvRuleMessageCEL = `self.name + (self.name.startsWith('ETCD_') ? ' may not be set: only etcd settings that cannot change the member identity, data location, log outputs or TLS policy are allowed (e.g. ETCD_QUOTA_BACKEND_BYTES, ETCD_SNAPSHOT_COUNT, ETCD_HEARTBEAT_INTERVAL, ETCD_LOG_LEVEL)' : ' may not be set: the operator sets it, or it changes how the member trusts or routes its connections')`

// envName is the environment variable etcd reads for a flag.
func envName(flag string) string {
	return "ETCD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// ForbiddenEnvNames lists, sorted as declared, every exact variable name spec.pod.etcdEnv
// may not set; ForbiddenEnvPrefixes the name prefixes. The CRDs' CEL rule holds the same.
func ForbiddenEnvNames() []string {
	out := append(append([]string{}, retiredEnv...), ownEnv...)
	for _, f := range operatorFlags {
		out = append(out, envName(f))
	}
	for _, f := range unsafeFlags {
		out = append(out, envName(f))
	}
	return out
}

// ForbiddenEnvPrefixes lists the name prefixes spec.pod.etcdEnv may not use.
func ForbiddenEnvPrefixes() []string { return append([]string{}, unsafePrefixes...) }

// forbiddenEnv completes "<name> ..." with why spec.pod.etcdEnv may not set name, or
// returns "" if it may.
func forbiddenEnv(name string) string {
	if strings.HasPrefix(name, "ETCD_") {
		return forbiddenEtcdEnv(name)
	}
	for _, n := range deniedOtherEnv {
		if name == n {
			return "may not be set: it changes how the member trusts or routes its connections (weaker TLS, a proxy, other trusted roots)"
		}
	}
	for _, n := range ownEnv {
		if name == n {
			return "is set by the operator"
		}
	}
	for _, n := range retiredEnv {
		if name == n {
			return "is reserved by the operator"
		}
	}
	return ""
}

// forbiddenEtcdEnv is forbiddenEnv for an ETCD_* name: anything not allowed, with the
// most specific reason.
func forbiddenEtcdEnv(name string) string {
	for _, f := range operatorFlags {
		if name == envName(f) {
			return "is set by the operator (a flag on etcd's command line, which etcd refuses to see repeated in its environment)"
		}
	}
	for _, f := range unsafeFlags {
		if name == envName(f) {
			return "may not be set: it would fork, move or weaken the cluster behind the operator's back"
		}
	}
	for _, p := range unsafePrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Sprintf("may not be set: %s* variables would fork, rejoin or weaken the cluster behind the operator's back", p)
		}
	}
	for _, f := range allowedEtcdFlags {
		if name == envName(f) {
			return ""
		}
	}
	return "may not be set: only etcd settings that cannot change the member's identity, data location, log outputs or TLS policy are allowed (see the README)"
}

// validateEnv refuses the first variable of spec.pod.etcdEnv that may not be set,
// naming it.
func validateEnv(c *v1beta2.EtcdCluster) error {
	if c.Spec.Pod == nil {
		return nil
	}
	for _, e := range c.Spec.Pod.EtcdEnv {
		if why := forbiddenEnv(e.Name); why != "" {
			return fmt.Errorf("render: spec.pod.etcdEnv: %s %s", e.Name, why)
		}
	}
	return nil
}
