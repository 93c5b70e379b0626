// Package runtest holds tests only: it runs the member pods rendered by package render
// as real etcd processes, the way a kubelet would run them, to prove that the chart's
// command, arguments, environment, TLS files and probes make a working cluster.
//
// Its TestMain moves the test binary into private mount and network namespaces (see
// test/bench.EnterNamespace) so that member DNS names can be published in a private
// /etc/hosts; inside, every pod gets a network namespace of its own on a bridge, with
// IPv4, IPv6 or both (podnet_test.go), as under a real kubelet with a CNI plugin.
package runtest
