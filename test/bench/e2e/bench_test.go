package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const etcdImage = "quay.io/coreos/etcd:v3.7.3"

// TestNamespace checks what EnterNamespace promises, without any cluster: cluster DNS
// in resolv.conf, and the node daemons' directories and the kubelet's global sysctls
// private to the namespace.
func TestNamespace(t *testing.T) {
	if !bench.InNamespace() {
		t.Fatal("TestMain did not enter the bench namespace")
	}
	resolv, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nameserver " + bench.ClusterDNSIP, "search default.svc.cluster.local svc.cluster.local cluster.local"} {
		if !strings.Contains(string(resolv), want) {
			t.Errorf("/etc/resolv.conf lacks %q:\n%s", want, resolv)
		}
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if lo.Flags&net.FlagUp == 0 {
		t.Error("lo is down")
	}
	// A fresh net namespace: lo and (once a bench ran) its bridge, nothing that leaves it.
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if i.Name != "lo" && i.Name != "bench0" && !strings.HasPrefix(i.Name, "bn") {
			t.Errorf("unexpected interface %s in the bench namespace", i.Name)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" /run ", " /var/lib ", " /var/log ", " /proc/sys/vm/overcommit_memory ", " /proc/sys/kernel/panic "} {
		if !strings.Contains(string(mounts), want) {
			t.Errorf("%q is not a private mount of the bench namespace", strings.TrimSpace(want))
		}
	}
	// The kubelet reads the values it wants and so writes nothing machine-wide.
	if v, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err != nil || strings.TrimSpace(string(v)) != "1" {
		t.Errorf("vm.overcommit_memory as the kubelet sees it = %q (%v), want 1", v, err)
	}
}

// TestBench starts one bench and runs the checks in order; later ones build on the
// static etcd cluster of earlier ones, and the node-down check runs last.
func TestBench(t *testing.T) {
	b := bench.NewForTest(t, bench.Options{})
	tm := b.Timings()
	t.Logf("bench start: control plane ready %v, %d nodes ready %v", tm.ControlPlane.Round(time.Millisecond), len(b.Nodes()), tm.NodesReady.Round(time.Millisecond))
	ctx := context.Background()

	t.Run("NodesReadyAndScheduled", func(t *testing.T) { testNodes(ctx, t, b) })
	clusterOK := t.Run("StaticEtcdCluster", func(t *testing.T) { testStaticCluster(ctx, t, b) })
	t.Run("KillRestartsUnderAlways", func(t *testing.T) {
		if !clusterOK {
			t.Skip("static cluster did not come up")
		}
		testKillRestarts(ctx, t, b)
	})
	t.Run("KillFailsUnderNever", func(t *testing.T) { testKillNever(ctx, t, b) })
	t.Run("NodeDown", func(t *testing.T) { testNodeDown(ctx, t, b) })
}

func testNodes(ctx context.Context, t *testing.T, b *bench.Bench) {
	c := b.Client()
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Fatalf("got %d nodes, want 3", len(nodes.Items))
	}
	zones := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if ok, why := bench.NodeSchedulable(n); !ok {
			t.Errorf("node %s not schedulable: %s", n.Name, why)
		}
		zones[n.Labels[corev1.LabelTopologyZone]] = true
		// Heartbeats go through Leases, which kube-controller-manager watches.
		var lease coordinationv1.Lease
		if err := c.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: n.Name}, &lease); err != nil {
			t.Errorf("node %s lease: %v", n.Name, err)
		}
	}
	if !zones["zone-a"] || !zones["zone-b"] || !zones["zone-c"] {
		t.Errorf("zones = %v, want zone-a, zone-b, zone-c", zones)
	}

	// The real scheduler binds a pod to one of them and the kubelet runs it to completion.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "main", Image: etcdImage, Command: []string{"etcdctl"}, Args: []string{"version"},
			}},
		},
	}
	cpu0, err := b.NodesCPU()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, pod, 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	// The nodes' CPU counters see the pod's work in the pods' cgroup and the sandbox and
	// container starts in the agents'.
	if cpu1, err := b.NodesCPU(); err != nil {
		t.Error(err)
	} else if cpu1.Pods <= cpu0.Pods || cpu1.Agents <= cpu0.Agents {
		t.Errorf("the nodes' CPU did not grow while a pod ran: pods %v → %v, agents %v → %v", cpu0.Pods, cpu1.Pods, cpu0.Agents, cpu1.Agents)
	}
	if !strings.HasPrefix(pod.Spec.NodeName, "bench-node-") {
		t.Errorf("pod bound to %q", pod.Spec.NodeName)
	}
	logs, err := b.PodLogs(ctx, "default", "hello", "main")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "etcdctl version: 3.7.3") {
		t.Errorf("pod output %q lacks the etcdctl version", logs)
	}

	// An image no registry has is reported in the container's waiting state as a failed
	// pull (the bench registry answers for every registry host), and nothing runs.
	bad := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "unknown-image", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/nope:v1"}}},
	}
	if err := c.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, bad, 30*time.Second, "image error", func(p *corev1.Pod) bool {
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				return true
			}
		}
		return false
	})
}

const (
	clusterNS  = "static"
	clusterSvc = "etcd"
)

var members = []string{"m1", "m2", "m3"}

func memberHost(name string) string { return name + "." + clusterSvc + "." + clusterNS + ".svc" }

// etcdPod is a member of a statically bootstrapped cluster: stable DNS name through
// hostname+subdomain, listening on every address of its pod.
func etcdPod(ns, name string, initialCluster string, policy corev1.RestartPolicy) *corev1.Pod {
	host := memberHost(name)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "static-etcd"}},
		Spec: corev1.PodSpec{
			Hostname:      name,
			Subdomain:     clusterSvc,
			RestartPolicy: policy,
			Containers: []corev1.Container{{
				Name:    "etcd",
				Image:   etcdImage,
				Command: []string{"/usr/local/bin/etcd"},
				Args: []string{
					"--name=" + name,
					"--data-dir=/var/etcd/data",
					"--listen-client-urls=http://0.0.0.0:2379",
					"--advertise-client-urls=http://" + host + ":2379",
					"--listen-peer-urls=http://0.0.0.0:2380",
					"--initial-advertise-peer-urls=http://" + host + ":2380",
					"--initial-cluster=" + initialCluster,
					"--initial-cluster-state=new",
					"--initial-cluster-token=" + ns,
				},
				Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				Ports:        []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "peer", ContainerPort: 2380}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/etcd"}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2379)}},
					PeriodSeconds:    1,
					FailureThreshold: 3,
				},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

func testStaticCluster(ctx context.Context, t *testing.T, b *bench.Bench) {
	c := b.Client()
	start := time.Now()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNS}}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: clusterSvc, Namespace: clusterNS},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true, // peers must find each other before any is Ready
			Selector:                 map[string]string{"app": "static-etcd"},
			Ports:                    []corev1.ServicePort{{Name: "client", Port: 2379}, {Name: "peer", Port: 2380}},
		},
	}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	var initial []string
	for _, m := range members {
		initial = append(initial, m+"=http://"+memberHost(m)+":2380")
	}
	pods := map[string]*corev1.Pod{}
	for _, m := range members {
		p := etcdPod(clusterNS, m, strings.Join(initial, ","), corev1.RestartPolicyAlways)
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		pods[m] = p
	}
	for _, m := range members {
		waitPod(t, c, pods[m], 90*time.Second, "Ready", framework.PodReady)
	}
	readyAt := time.Since(start)

	cli := etcdClient(t)
	if _, err := cli.Put(ctx, "bench", "works"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "works" {
		t.Fatalf("get bench = %v", resp.Kvs)
	}
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Members) != 3 {
		t.Errorf("member list has %d members, want 3", len(ml.Members))
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
		if !strings.HasPrefix(p.Status.PodIP, "10.244.") {
			t.Errorf("pod %s IP %q is not from a node's pod CIDR", p.Name, p.Status.PodIP)
		}
	}
	for node := range nodes {
		assertNodeMountsPrivate(t, b, node)
	}
	t.Logf("3-member static etcd cluster: all Ready %v after creation, put/get ok %v; on nodes %v",
		readyAt.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), nodes)
}

func etcdClient(t *testing.T) *clientv3.Client {
	var eps []string
	for _, m := range members {
		eps = append(eps, "http://"+memberHost(m)+":2379")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func testKillRestarts(ctx context.Context, t *testing.T, b *bench.Bench) {
	c := b.Client()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: "m2"}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	before := pod.Status.ContainerStatuses[0].RestartCount
	pidBefore, ok := b.Faults().PodPID(clusterNS, "m2", "etcd")
	if !ok {
		t.Fatal("no pid for m2/etcd")
	}
	if err := b.Faults().KillPod(clusterNS, "m2", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, pod, 60*time.Second, "restarted after SIGKILL", func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses
		return len(s) == 1 && s[0].RestartCount > before && s[0].LastTerminationState.Terminated != nil
	})
	term := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if term.ExitCode != 137 && term.Signal != int32(syscall.SIGKILL) {
		t.Errorf("last termination = exit %d signal %d reason %q, want SIGKILL (137)", term.ExitCode, term.Signal, term.Reason)
	}
	waitPod(t, c, pod, 60*time.Second, "Ready again", framework.PodReady)
	pidAfter, ok := b.Faults().PodPID(clusterNS, "m2", "etcd")
	if !ok {
		t.Fatal("no pid for m2/etcd after restart")
	}
	if pidAfter == pidBefore {
		t.Errorf("member process pid %d unchanged after restart", pidAfter)
	}
	// The restarted member kept its emptyDir data and rejoined: the key is still there.
	cli := etcdClient(t)
	resp, err := cli.Get(ctx, "bench")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get after restart: %v %v", resp, err)
	}
}

func testKillNever(ctx context.Context, t *testing.T, b *bench.Bench) {
	c := b.Client()
	// A single-member cluster of its own, so it is Ready on its own.
	pod := etcdPod("default", "solo", "solo=http://solo.etcd.default.svc:2380", corev1.RestartPolicyNever)
	pod.Labels = map[string]string{"app": "solo"}
	host := "solo." + clusterSvc + ".default.svc"
	for i, a := range pod.Spec.Containers[0].Args {
		pod.Spec.Containers[0].Args[i] = strings.ReplaceAll(a, memberHost("solo"), host)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: clusterSvc, Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Selector: map[string]string{"app": "solo"}, Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}},
	}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, pod, 60*time.Second, "Ready", framework.PodReady)
	if err := b.Faults().KillPod("default", "solo", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, pod, 30*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	s := pod.Status.ContainerStatuses[0]
	if s.State.Terminated == nil || s.RestartCount != 0 {
		t.Errorf("container status after kill under Never: %+v", s)
	}
}

func testNodeDown(ctx context.Context, t *testing.T, b *bench.Bench) {
	c := b.Client()
	node := b.Nodes()[2]
	// A pod on that node, to see taint-based eviction act on the short toleration.
	victim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node},
			Containers: []corev1.Container{{Name: "main", Image: etcdImage, Command: []string{"etcd"},
				Args: []string{"--data-dir=/tmp/victim", "--listen-client-urls=http://0.0.0.0:2379",
					"--advertise-client-urls=http://$(POD_IP):2379", "--listen-peer-urls=http://0.0.0.0:2380"},
				Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}}},
		},
	}
	if err := c.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, victim, 60*time.Second, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	start := time.Now()
	if err := b.Faults().NodeDown(node); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	// Grace period 20s plus a monitor period; allow generous slack on a busy machine.
	waitObj(t, c, n, 50*time.Second, "Ready=Unknown", func() bool {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionUnknown
			}
		}
		return false
	})
	t.Logf("node %s Ready=Unknown %v after NodeDown", node, time.Since(start).Round(time.Millisecond))
	waitObj(t, c, n, 20*time.Second, "unreachable taint", func() bool {
		for _, tn := range n.Spec.Taints {
			if tn.Key == corev1.TaintNodeUnreachable {
				return true
			}
		}
		return false
	})
	// tolerationSeconds=10 from the apiserver defaults: the pod is evicted shortly after.
	waitPod(t, c, victim, 40*time.Second, "evicted (deletionTimestamp set)", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	t.Logf("pod on %s evicted %v after NodeDown", node, time.Since(start).Round(time.Millisecond))

	if err := b.Faults().NodeUp(node); err != nil {
		t.Fatal(err)
	}
	waitObj(t, c, n, 40*time.Second, "schedulable again", func() bool { ok, _ := bench.NodeSchedulable(n); return ok })
}

// waitPod polls pod until cond holds; pod is updated in place.
func waitPod(t *testing.T, c client.Client, pod *corev1.Pod, timeout time.Duration, what string, cond func(*corev1.Pod) bool) {
	t.Helper()
	waitObj(t, c, pod, timeout, pod.Name+" "+what, func() bool { return cond(pod) })
}

func waitObj(t *testing.T, c client.Client, obj client.Object, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	poll.Eventually(t, timeout, 200*time.Millisecond, what, func() error {
		if err := c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		if !cond() {
			return fmt.Errorf("last: %s", describe(obj))
		}
		return nil
	})
}

func describe(obj client.Object) string {
	switch o := obj.(type) {
	case *corev1.Pod:
		return fmt.Sprintf("phase=%s node=%s conditions=%v statuses=%+v", o.Status.Phase, o.Spec.NodeName, o.Status.Conditions, o.Status.ContainerStatuses)
	case *corev1.Node:
		return fmt.Sprintf("conditions=%v taints=%v", o.Status.Conditions, o.Spec.Taints)
	}
	return ""
}

// assertNodeMountsPrivate checks that a node running a pod keeps its mounts (the
// containers' root file systems) in its own mount table: the test process sees nothing
// mounted below the node's directory. With one table for every
// node, each container start's reads of it grew with the whole bench's pods (300 pods
// started ~7 a minute on 2 cores, their runc processes waiting on the kernel's mount lock).
func assertNodeMountsPrivate(t *testing.T, b *bench.Bench, node string) {
	t.Helper()
	here, inNode, err := b.NodeMounts(node)
	if err != nil {
		t.Fatal(err)
	}
	rootfs := 0
	for _, mp := range inNode {
		if strings.HasSuffix(mp, "/rootfs") {
			rootfs++
		}
	}
	if rootfs == 0 {
		t.Errorf("node %s runs a pod but its own mount table has no container root file system below its directory: %v", node, inNode)
	}
	if len(here) != 0 {
		t.Errorf("the test process sees %v below node %s's directory; want nothing mounted there", here, node)
	}
}
