// Command kubectl-etcd is the `kubectl etcd` plugin (internal/kubectletcd): put it on
// PATH and kubectl finds it.
package main

import (
	"os"

	"github.com/etcd-operator/etcd-operator/internal/kubectletcd"
)

func main() { os.Exit(kubectletcd.Main()) }
