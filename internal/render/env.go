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
// operator's back. Those are refused, at admission (the CRDs' CEL rule on the env list
// holds the same names and prefixes; test/olm and api/v1beta2 check both agree) and when
// reconciling, for objects stored before the rule existed.

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
	return ""
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
