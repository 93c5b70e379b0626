package monitoring

import (
	"path"
	"slices"
	"testing"
)

type kustomization struct {
	Namespace string   `json:"namespace"`
	Resources []string `json:"resources"`
}

// TestKustomizationShipsTheBundle checks config/prometheus builds the rules and both
// monitors into the namespace config/default installs the operator in, and that
// config/default does not include it (a cluster without the Prometheus Operator's CRDs
// would refuse the whole install).
func TestKustomizationShipsTheBundle(t *testing.T) {
	var mon, def kustomization
	decodeLoose(t, readFile(t, "config/prometheus/kustomization.yaml"), &mon)
	decodeLoose(t, readFile(t, "config/default/kustomization.yaml"), &def)
	for _, f := range []string{rulesFile, operatorMonitor, membersMonitor} {
		if !slices.Contains(mon.Resources, path.Base(f)) {
			t.Errorf("config/prometheus/kustomization.yaml does not list %s", path.Base(f))
		}
	}
	if mon.Namespace != def.Namespace {
		t.Errorf("config/prometheus namespace %q, the operator's (config/default) is %q: the operator PodMonitor would find no pods", mon.Namespace, def.Namespace)
	}
	for _, r := range def.Resources {
		if path.Clean(r) == "../prometheus" {
			t.Error("config/default includes ../prometheus: plain clusters have no PrometheusRule CRD")
		}
	}
}
