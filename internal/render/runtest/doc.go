// Package runtest holds tests only: it runs the member pods rendered by package render
// as real etcd processes, the way a kubelet would run them, to prove that the chart's
// command, arguments, environment, TLS files and probes make a working cluster.
//
// Its TestMain moves the test binary into private mount and network namespaces (see
// test/bench.EnterNamespace) so that member DNS names can be published in a private
// /etc/hosts and every pod gets its own loopback IP, as on the operator's bench.
package runtest
