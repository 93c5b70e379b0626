package etcdcluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// certificateExpiry is set by reportCertificates (status_certificates.go).
var certificateExpiry = gaugeVec("etcd_operator_certificate_expiry_seconds", "When the earliest certificate of a kind (peer, server, client, ca) of the TLS Secrets a cluster's spec names (with built-in issuing, the generation in effect) and of the member Secrets a member pod still mounts expires, as Unix time in seconds.", "namespace", "cluster", "kind")

func init() { metrics.Registry.MustRegister(certificateExpiry) }

func forgetCertificateMetrics(labels prometheus.Labels) { certificateExpiry.DeletePartialMatch(labels) }
