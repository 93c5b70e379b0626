package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// Eviction and node-failure detection are shortened so fault tests take seconds. The
	// grace is twice a kubelet's lease (nodeconfig.go): with 10 s against an 8 s lease
	// renewed every 2 s with 2 s timeouts, a 2-core machine running two benches and the
	// unit tests' compiles had kubelets miss renewals for over 10 s, and the node lost
	// its members to a NotReady eviction mid-test (CI of 2026-12-06).
	tolerationSeconds       = "10"
	nodeMonitorGracePeriod  = "20s"
	nodeMonitorPeriod       = "1s"
	controlPlaneStartBudget = 90 * time.Second
	nodesReadyBudget        = 60 * time.Second
)

// startControlPlane starts etcd and kube-apiserver, waits for /readyz, writes the admin
// kubeconfig, then starts kube-controller-manager and kube-scheduler.
func (b *Bench) startControlPlane(ctx context.Context) error {
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	b.apiPort = apiPort
	loop := func(p int) string { return "http://127.0.0.1:" + strconv.Itoa(p) }

	if err := b.run("etcd", filepath.Join(EtcdBinDir(EtcdVersion), "etcd"),
		"--name=bench",
		"--data-dir="+filepath.Join(b.dir, "etcd"),
		"--listen-client-urls="+loop(etcdClient),
		"--advertise-client-urls="+loop(etcdClient),
		"--listen-peer-urls="+loop(etcdPeer),
		"--initial-advertise-peer-urls="+loop(etcdPeer),
		"--initial-cluster=bench="+loop(etcdPeer),
		// Throwaway data: fsync only costs start-up and write latency here.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	); err != nil {
		return err
	}

	p := b.pki
	apiArgs := []string{
		"--etcd-servers=" + loop(etcdClient),
		// Inside the bench namespace: loopback for the test process, the bridge address
		// for the nodes and (as the kubernetes Service's endpoint) for pods.
		"--bind-address=0.0.0.0",
		"--advertise-address=" + b.advertiseIP(),
		// exec, logs and port-forward go to the kubelets, which accept any client.
		"--kubelet-client-certificate=" + p.AdminCert,
		"--kubelet-client-key=" + p.AdminKey,
		"--kubelet-preferred-address-types=InternalIP",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CACert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAPub,
		"--service-account-signing-key-file=" + p.SAKey,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + b.serviceCIDRs(),
		"--default-not-ready-toleration-seconds=" + tolerationSeconds,
		"--default-unreachable-toleration-seconds=" + tolerationSeconds,
		"--allow-privileged=true",
		"--profiling=false",
		"--cert-dir=" + filepath.Join(b.dir, "pki", "apiserver"),
	}
	apiArgs = append(apiArgs, b.opts.ExtraAPIServerArgs...)
	if err := b.run("kube-apiserver", filepath.Join(K8sBinDir(), "kube-apiserver"), apiArgs...); err != nil {
		return err
	}

	b.restConfig = &rest.Config{
		Host: "https://127.0.0.1:" + strconv.Itoa(apiPort),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.caPEM,
			CertData: p.adminCertPEM,
			KeyData:  p.adminKeyPEM,
		},
		// Tests and the operator share one apiserver on one machine; client-side
		// throttling would only add latency to measurements.
		QPS:   200,
		Burst: 400,
	}
	if err := b.waitReadyz(ctx); err != nil {
		return err
	}

	b.kubeconfig = filepath.Join(b.dir, "admin.kubeconfig")
	if err := WriteKubeconfig(b.kubeconfig, b.restConfig.Host, p.caPEM, p.adminCertPEM, p.adminKeyPEM); err != nil {
		return err
	}
	// The client gets its own loggers so that using the bench does not depend on the
	// test having called controller-runtime's log.SetLogger (which warns after 30s).
	cc := b.RestConfig()
	cc.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	clog := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "bench client:", prefix, args) }, funcr.Options{})
	if b.client, err = client.New(cc, client.Options{Scheme: b.scheme, Log: clog}); err != nil {
		return err
	}

	if err := b.run("kube-controller-manager", filepath.Join(K8sBinDir(), "kube-controller-manager"),
		"--kubeconfig="+b.kubeconfig,
		"--authentication-kubeconfig="+b.kubeconfig,
		"--authorization-kubeconfig="+b.kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(kcmPort),
		"--cert-dir="+filepath.Join(b.dir, "pki", "kcm"),
		"--leader-elect=false",
		"--controllers=*,-csrsigning",
		"--service-account-private-key-file="+p.SAKey,
		"--root-ca-file="+p.CACert,
		"--cluster-signing-cert-file="+p.CACert,
		"--cluster-signing-key-file="+p.CAKey,
		"--service-cluster-ip-range="+b.serviceCIDRs(),
		"--use-service-account-credentials=true",
		"--node-monitor-grace-period="+nodeMonitorGracePeriod,
		"--node-monitor-period="+nodeMonitorPeriod,
		// The default client throttling (20 qps) serialises controller start-up and
		// costs seconds before nodes lose their not-ready taint.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--profiling=false",
	); err != nil {
		return err
	}
	return b.run("kube-scheduler", filepath.Join(K8sBinDir(), "kube-scheduler"),
		"--kubeconfig="+b.kubeconfig,
		"--authentication-kubeconfig="+b.kubeconfig,
		"--authorization-kubeconfig="+b.kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(schedPort),
		"--leader-elect=false",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--profiling=false",
	)
}

// run starts a control-plane process and records it for Stop.
func (b *Bench) run(name, bin string, args ...string) error {
	p, err := startProcess(b.dir, name, bin, args...)
	if err != nil {
		return err
	}
	b.track(p)
	return nil
}

// track records a process for Stop, which stops them in reverse start order.
func (b *Bench) track(p *process) {
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
}

// checkProcs fails fast when a control-plane process died, with its log's tail.
func (b *Bench) checkProcs() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.procs {
		if gone, err := p.exited(); gone {
			return err
		}
	}
	return nil
}

// poll calls cond every interval until it returns true, an error, the processes die,
// ctx ends or the budget runs out; last describes the last observation for errors.
func (b *Bench) poll(ctx context.Context, what string, budget, interval time.Duration, cond func() (bool, string, error)) error {
	deadline := time.Now().Add(budget)
	last := ""
	for {
		ok, msg, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if msg != "" {
			last = msg
		}
		if err := b.checkProcs(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not done after %v (last: %s); logs in %s", what, budget, last, filepath.Join(b.dir, "logs"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(interval):
		}
	}
}

func (b *Bench) waitReadyz(ctx context.Context) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.pki.caPEM)
	cert, err := tls.X509KeyPair(b.pki.adminCertPEM, b.pki.adminKeyPEM)
	if err != nil {
		return err
	}
	hc := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
	}
	defer hc.CloseIdleConnections()
	return b.poll(ctx, "kube-apiserver /readyz", controlPlaneStartBudget, 100*time.Millisecond, func() (bool, string, error) {
		resp, err := hc.Get(b.restConfig.Host + "/readyz")
		if err != nil {
			return false, err.Error(), nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, lastLines(string(body), 3)), nil
	})
}

// waitNodesReady waits until the scheduler can use every node: Ready=True and without
// the not-ready/unreachable taints kube-controller-manager manages, and until the
// default ServiceAccount exists (Pods in "default" are rejected before that).
func (b *Bench) waitNodesReady(ctx context.Context) error {
	return b.poll(ctx, "nodes Ready", nodesReadyBudget, 200*time.Millisecond, func() (bool, string, error) {
		if err := b.nodeDaemonsExited(); err != nil {
			return false, "", err
		}
		var nodes corev1.NodeList
		if err := b.client.List(ctx, &nodes); err != nil {
			return false, err.Error(), nil
		}
		ready := 0
		var notes []string
		for i := range nodes.Items {
			if ok, why := NodeSchedulable(&nodes.Items[i]); ok {
				ready++
			} else {
				notes = append(notes, nodes.Items[i].Name+": "+why)
			}
		}
		if ready < b.opts.Nodes {
			return false, fmt.Sprintf("%d/%d nodes ready %v", ready, b.opts.Nodes, notes), nil
		}
		var sa corev1.ServiceAccount
		if err := b.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &sa); err != nil {
			return false, "default ServiceAccount: " + err.Error(), nil
		}
		return true, "", nil
	})
}

// NodeSchedulable reports whether a node is Ready and free of the taints the node
// lifecycle controller puts on nodes that are not (and why not).
func NodeSchedulable(n *corev1.Node) (bool, string) {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != corev1.ConditionTrue {
				return false, "Ready=" + string(c.Status)
			}
			ready = true
		}
	}
	if !ready {
		return false, "no Ready condition"
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false, "taint " + t.Key
		}
	}
	if n.Spec.Unschedulable {
		return false, "unschedulable"
	}
	return true, ""
}

// WriteKubeconfig writes an admin kubeconfig for server with inline credentials.
func WriteKubeconfig(path, server string, caPEM, certPEM, keyPEM []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["bench-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench-admin", Namespace: "default"}
	cfg.CurrentContext = "bench"
	return clientcmd.WriteToFile(*cfg, path)
}

// AdminCredentials returns the CA and admin client pair, for kubeconfigs pointing
// elsewhere (the bench command's host-side proxy).
func (b *Bench) AdminCredentials() (caPEM, certPEM, keyPEM []byte) {
	return b.pki.caPEM, b.pki.adminCertPEM, b.pki.adminKeyPEM
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
