// Package metricvec declares the operator's own labelled Prometheus series in one line
// each: a gauge or counter vector of a name, its help text and its label names. The
// controllers register what they declare on the manager's registry themselves.
package metricvec

import "github.com/prometheus/client_golang/prometheus"

// Gauge is a gauge vector called name, labelled by labels.
func Gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// Counter is a counter vector called name, labelled by labels.
func Counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}
