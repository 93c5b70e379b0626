// Package helmcharts embeds the Helm charts the operator renders in-process.
//
// This file lives next to the chart directories because go:embed can only reach files
// at or below the directory of the Go file that embeds them.
package helmcharts

import (
	"embed"
	"io/fs"
)

// EtcdClusterChartDir is the directory of the member chart, relative to this package.
const EtcdClusterChartDir = "etcd-cluster"

// The "all:" prefix keeps files starting with "." or "_" (e.g. templates/_helpers.tpl),
// which go:embed would otherwise skip.
//
//go:embed all:etcd-cluster
var files embed.FS

// EtcdCluster returns the files of the etcd-cluster chart (the member Pods, Services,
// PodDisruptionBudget and PVCs of one etcd cluster), rooted at the chart directory: it
// holds Chart.yaml, values.yaml and templates/.
func EtcdCluster() fs.FS {
	sub, err := fs.Sub(files, EtcdClusterChartDir)
	if err != nil {
		// fs.Sub fails only for an invalid path, and the path is a constant.
		panic(err)
	}
	return sub
}
