// Package e2e runs the operator against the local bench: a real control plane, real
// nodes (kubelet, containerd, CNI, kube-proxy, CoreDNS) and real etcd images. The test binary re-executes itself inside the bench's private mount and
// network namespaces first.
package e2e

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/test/bench"
)

func TestMain(m *testing.M) { bench.RunTestMain(m) }
