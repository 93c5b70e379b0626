package render

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	helmcharts "github.com/etcd-operator/etcd-operator/helm-charts"
	corev1 "k8s.io/api/core/v1"
)

// chartDir is the chart in the source tree; the embedded copy is the same files.
const chartDir = "../../helm-charts/etcd-cluster"

// TestHelmLint runs Helm's own linter (what `helm lint` runs: Chart.yaml rules, values,
// rendering and YAML/metadata checks of every template) on the chart, with the chart's
// default values and with values built from realistic clusters. Warnings count as
// failures; only informational messages (e.g. "icon is recommended") are allowed.
func TestHelmLint(t *testing.T) {
	plain := coreosSample("3.6.16")
	full := tlsCluster("etcd-peer-tls", "etcd-server-tls")
	full.Spec.Pod = &v1beta2.PodPolicy{
		AntiAffinity:              true,
		PersistentVolumeClaimSpec: pvcSpec(),
		Labels:                    map[string]string{"team": "storage"},
		Annotations:               map[string]string{"note": "x"},
		EtcdEnv:                   []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"}},
		DNSTimeoutInSecond:        30,
		ClusterDomain:             "cluster.local",
	}
	cases := map[string]map[string]interface{}{"chart defaults": nil}
	for name, c := range map[string]*v1beta2.EtcdCluster{"coreos sample": plain, "every option": full} {
		vals, err := Values(Input{Cluster: c, Members: bootstrap(c, 3, "")})
		if err != nil {
			t.Fatal(err)
		}
		cases[name] = vals
	}
	for name, vals := range cases {
		t.Run(name, func(t *testing.T) {
			l := lint.All(chartDir, vals, "default", false)
			for _, m := range l.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint: %s", m.Error())
				}
			}
			if l.HighestSeverity > support.InfoSev {
				t.Errorf("helm lint highest severity %d", l.HighestSeverity)
			}
		})
	}
}

// TestEmbeddedChartIsTheSourceTree guards against the embed pattern silently leaving a
// file out (go:embed skips "_" and "." files without the all: prefix).
func TestEmbeddedChartIsTheSourceTree(t *testing.T) {
	onDisk := map[string]string{}
	err := filepath.WalkDir(chartDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(chartDir, p)
		onDisk[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	embedded := map[string]string{}
	err = fs.WalkDir(helmcharts.EtcdCluster(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(helmcharts.EtcdCluster(), p)
		embedded[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk) != len(embedded) {
		t.Errorf("embedded %d files, source tree %d", len(embedded), len(onDisk))
	}
	for p, b := range onDisk {
		if embedded[p] != b {
			t.Errorf("%s differs or is missing in the embedded chart", p)
		}
	}
	if _, ok := embedded["templates/_helpers.tpl"]; !ok {
		t.Errorf("templates/_helpers.tpl not embedded")
	}
	md := sharedRenderer.Chart().Metadata
	if md.Name != "etcd-cluster" || md.APIVersion != "v2" {
		t.Errorf("chart metadata %+v", md)
	}
}
