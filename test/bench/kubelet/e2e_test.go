package kubelet

import (
	"context"
	"fmt"
	"github.com/etcd-operator/etcd-operator/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// cacheDir is where hack/tools.sh keeps the binaries.
func cacheDir() string { return testenv.CacheDir() }

// needBinaries skips (or under CI fails) when the cached binaries are missing.
func needBinaries(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("missing %s (run hack/tools.sh): %v", p, err)
			}
			t.Skipf("missing %s; run hack/tools.sh to build it", p)
		}
	}
}

// testResolveImage maps images to local executables: etcd images to the cached etcd
// build, anything else to command[0] looked up on the PATH.
func testResolveImage(cache string) func(image, cmd0 string) (string, error) {
	return func(image, cmd0 string) (string, error) {
		if strings.HasPrefix(image, "quay.io/coreos/etcd:") {
			v := strings.TrimPrefix(image, "quay.io/coreos/etcd:")
			return filepath.Join(cache, "etcd-"+v, "etcd"), nil
		}
		if cmd0 == "" {
			return "", fmt.Errorf("image %s has no known entrypoint", image)
		}
		return exec.LookPath(cmd0)
	}
}

type e2eEnv struct {
	cs    kubernetes.Interface
	k     *Kubelet
	ns    string
	root  string
	hosts string
}

// startE2E runs a real kube-apiserver (envtest: no scheduler or controller manager) and
// the kubelet with one node.
func startE2E(t *testing.T) *e2eEnv {
	requireRoot(t)
	cache := cacheDir()
	k8s := filepath.Join(cache, "k8s-v1.37.2")
	etcd := filepath.Join(cache, "etcd-v3.7.3", "etcd")
	needBinaries(t, filepath.Join(k8s, ".done"), etcd)
	assets := t.TempDir()
	for name, target := range map[string]string{
		"kube-apiserver": filepath.Join(k8s, "kube-apiserver"),
		"kubectl":        filepath.Join(k8s, "kubectl"),
		"etcd":           etcd,
	} {
		if err := os.Symlink(target, filepath.Join(assets, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cs := kubernetes.NewForConfigOrDie(cfg)

	root := t.TempDir()
	hosts := filepath.Join(root, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := New(Config{
		RestConfig:        cfg,
		Nodes:             []NodeSpec{{Name: "node-a", Labels: map[string]string{"topology.kubernetes.io/zone": "z1"}}},
		RootDir:           filepath.Join(root, "kubelet"),
		ResolveImage:      testResolveImage(cache),
		HostsFile:         hosts,
		APIServerHost:     "127.0.0.1",
		APIServerPort:     6443,
		PodIPPrefix:       "127.77.",
		HeartbeatInterval: 500 * time.Millisecond,
		Logger:            testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-k.Done():
		case <-time.After(30 * time.Second):
			t.Error("kubelet did not stop")
		}
	})
	select {
	case <-k.Ready():
	case <-time.After(60 * time.Second):
		t.Fatal("kubelet not ready")
	}
	e := &e2eEnv{cs: cs, k: k, ns: "e2e", root: root, hosts: hosts}
	bg := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(bg, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager here: create what it would (the default ServiceAccount).
	if _, err := cs.CoreV1().ServiceAccounts(e.ns).Create(bg, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// eventually polls cond every 100ms until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not reached within %v: %v", what, timeout, err)
}

func (e *e2eEnv) pod(t *testing.T, name string) *v1.Pod {
	t.Helper()
	p, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func etcdPod(ns, name string) *v1.Pod {
	fieldEnv := func(n, path string) v1.EnvVar {
		return v1.EnvVar{Name: n, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "etcd"}},
		Spec: v1.PodSpec{
			NodeName:                      "node-a", // no scheduler in envtest
			Hostname:                      name,
			Subdomain:                     "etcd",
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			Containers: []v1.Container{{
				Name:    "etcd",
				Image:   "quay.io/coreos/etcd:v3.7.3",
				Command: []string{"/usr/local/bin/etcd"},
				Args: []string{
					"--name=$(POD_NAME)", "--data-dir=/var/lib/etcd",
					"--listen-client-urls=http://$(POD_IP):2379", "--advertise-client-urls=http://$(POD_IP):2379",
					"--listen-peer-urls=http://$(POD_IP):2380", "--initial-advertise-peer-urls=http://$(POD_IP):2380",
					"--initial-cluster=$(POD_NAME)=http://$(POD_IP):2380",
				},
				Env:          []v1.EnvVar{fieldEnv("POD_IP", "status.podIP"), fieldEnv("POD_NAME", "metadata.name")},
				Ports:        []v1.ContainerPort{{Name: "client", ContainerPort: 2379}},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
				ReadinessProbe: &v1.Probe{
					ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/health", Port: intstr.FromString("client")}},
					PeriodSeconds: 1,
				},
			}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
}

// TestE2EEtcdPodLifecycle: node registration and heartbeats, an etcd pod with podIP
// expansion, an emptyDir and a readiness probe, DNS records, a SIGKILL restart, node
// down/up and graceful deletion.
func TestE2EEtcdPodLifecycle(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()

	node, err := e.cs.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["kubernetes.io/hostname"] != "node-a" || node.Labels["topology.kubernetes.io/zone"] != "z1" || node.Labels["kubernetes.io/os"] != "linux" {
		t.Fatalf("node labels %v", node.Labels)
	}
	if pods := node.Status.Allocatable[v1.ResourcePods]; pods.Value() != 110 {
		t.Fatalf("allocatable %v", node.Status.Allocatable)
	}
	leaseRenew := func() time.Time {
		l, err := e.cs.CoordinationV1().Leases(leaseNamespace).Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec.RenewTime.Time
	}
	first := leaseRenew()
	eventually(t, 10*time.Second, "lease renewed", func() error {
		if !leaseRenew().After(first) {
			return fmt.Errorf("renewTime still %v", first)
		}
		return nil
	})

	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: e.ns},
		Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"app": "etcd"}, PublishNotReadyAddresses: true,
			Ports: []v1.ServicePort{{Name: "client", Port: 2379}}},
	}
	if _, err := e.cs.CoreV1().Services(e.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const fqdn = "m1.etcd.e2e.svc.cluster.local"
	e.k.DelayDNS(fqdn, 5*time.Second)
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, etcdPod(e.ns, "m1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The undelayed short name appears first; the delayed FQDN only ~5s later.
	var shortSeen time.Time
	eventually(t, 30*time.Second, "short DNS name", func() error {
		b, _ := os.ReadFile(e.hosts)
		if !strings.Contains(string(b), "\tm1.etcd.e2e.svc\n") {
			return fmt.Errorf("no m1.etcd.e2e.svc in:\n%s", b)
		}
		shortSeen = time.Now()
		if strings.Contains(string(b), fqdn) {
			t.Fatalf("delayed record published together with the short name:\n%s", b)
		}
		return nil
	})
	eventually(t, 15*time.Second, "delayed FQDN", func() error {
		if b, _ := os.ReadFile(e.hosts); !strings.Contains(string(b), fqdn) {
			return fmt.Errorf("no %s yet", fqdn)
		}
		return nil
	})
	if el := time.Since(shortSeen); el < 4*time.Second {
		t.Fatalf("delayed record appeared %v after the short name, want about 5s", el)
	}
	eventually(t, 60*time.Second, "etcd pod Ready", func() error {
		p := e.pod(t, "m1")
		if !podReady(p) {
			return fmt.Errorf("phase %s conditions %v statuses %v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		}
		return nil
	})
	p := e.pod(t, "m1")
	ip := p.Status.PodIP
	if !strings.HasPrefix(ip, "127.77.") || p.Status.HostIP != "127.0.0.1" || p.Status.Phase != v1.PodRunning {
		t.Fatalf("podIP %q hostIP %q phase %s", ip, p.Status.HostIP, p.Status.Phase)
	}
	cst := p.Status.ContainerStatuses[0]
	if cst.State.Running == nil || !cst.Ready || cst.Started == nil || !*cst.Started || cst.RestartCount != 0 {
		t.Fatalf("container status %+v", cst)
	}
	// The data dir is the pod's emptyDir, not the host's /var/lib/etcd.
	volDir := filepath.Join(e.k.cfg.RootDir, "pods", fmt.Sprintf("%s_%s_%s", e.ns, "m1", p.UID), "volumes", "data")
	if _, err := os.Stat(filepath.Join(volDir, "member")); err != nil {
		t.Fatalf("etcd data not in the emptyDir: %v", err)
	}
	if _, err := os.Stat("/var/lib/etcd/member"); err == nil {
		t.Fatal("etcd data landed on the host's /var/lib/etcd")
	}
	eventually(t, 10*time.Second, "DNS records", func() error {
		b, _ := os.ReadFile(e.hosts)
		for _, want := range []string{ip + "\tm1.etcd.e2e.svc.cluster.local\n", ip + "\tetcd.e2e.svc\n", "127.0.0.1 localhost\n"} {
			if !strings.Contains(string(b), want) {
				return fmt.Errorf("hosts file lacks %q:\n%s", want, b)
			}
		}
		return nil
	})
	logPath := e.k.PodLogPath(e.ns, "m1", "etcd")
	if b, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(b), "127.77.") {
		t.Fatalf("log %s: %v\n%s", logPath, err, b)
	}

	// SIGKILL: terminated with 137, restarted with the same data.
	pid, ok := e.k.PodPID(e.ns, "m1", "etcd")
	if !ok {
		t.Fatal("no pid")
	}
	if err := e.k.KillPod(e.ns, "m1", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "restart after SIGKILL", func() error {
		p := e.pod(t, "m1")
		cs := p.Status.ContainerStatuses[0]
		if cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || !podReady(p) {
			return fmt.Errorf("status %+v", cs)
		}
		if code := cs.LastTerminationState.Terminated.ExitCode; code != 137 {
			t.Fatalf("exit code %d, want 137", code)
		}
		return nil
	})
	if newPID, _ := e.k.PodPID(e.ns, "m1", "etcd"); newPID == pid || syscall.Kill(pid, 0) == nil {
		t.Fatalf("old process %d still there (new %d)", pid, newPID)
	}

	// Node down: heartbeats stop and the processes die; node up: the container restarts.
	pid, _ = e.k.PodPID(e.ns, "m1", "etcd")
	if err := e.k.NodeDown("node-a"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "processes killed on node down", func() error {
		if syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("pid %d alive", pid)
		}
		return nil
	})
	stale := leaseRenew()
	deadline := time.Now().Add(2 * time.Second) // 4 heartbeat intervals
	for time.Now().Before(deadline) {
		if leaseRenew() != stale {
			t.Fatal("lease renewed while node down")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := e.k.NodeUp("node-a"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "pod back after node up", func() error {
		p := e.pod(t, "m1")
		if p.Status.ContainerStatuses[0].RestartCount != 2 || !podReady(p) || !leaseRenew().After(stale) {
			return fmt.Errorf("status %+v", p.Status.ContainerStatuses[0])
		}
		return nil
	})

	// Graceful deletion: the kubelet stops etcd and removes the object.
	pid, _ = e.k.PodPID(e.ns, "m1", "etcd")
	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, "m1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](5)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pod object removed", func() error {
		_, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, "m1", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	if syscall.Kill(pid, 0) == nil {
		t.Fatalf("etcd %d survived deletion", pid)
	}
	eventually(t, 10*time.Second, "DNS record removed", func() error {
		b, _ := os.ReadFile(e.hosts)
		if strings.Contains(string(b), "m1.etcd") {
			return fmt.Errorf("hosts still has m1:\n%s", b)
		}
		return nil
	})
}

func shellPod(ns, name string, policy v1.RestartPolicy, script string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.PodSpec{
			NodeName:      "node-a",
			RestartPolicy: policy,
			Containers: []v1.Container{{
				Name: "main", Image: "busybox", Command: []string{"sh", "-c", script},
				VolumeMounts: []v1.VolumeMount{{Name: "work", MountPath: "/run/bench-work"}},
			}},
			Volumes: []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
}

// TestE2ERestartPoliciesInitAndProbes covers init containers, terminal phases, the
// projected service account volume, and a liveness probe restarting a container.
func TestE2ERestartPoliciesInitAndProbes(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	create := func(p *v1.Pod) {
		t.Helper()
		if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Init container output is visible to the main container through the emptyDir.
	// The service account volume the ServiceAccount admission plugin would inject.
	if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	ok := shellPod(e.ns, "ok", v1.RestartPolicyNever,
		"cat /run/bench-work/from-init; echo \"host=$(hostname)\"; cat "+saDir+"/namespace "+saDir+"/ca.crt; echo; "+
			"test -s "+saDir+"/token && echo token; touch "+saDir+"/x 2>/dev/null || echo read-only")
	ok.Spec.ServiceAccountName = "default"
	ok.Spec.Volumes = append(ok.Spec.Volumes, v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		},
	}}})
	ok.Spec.Containers[0].VolumeMounts = append(ok.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "kube-api-access", MountPath: saDir, ReadOnly: true})
	ok.Spec.InitContainers = []v1.Container{{
		Name: "init", Image: "busybox", Command: []string{"sh", "-c", "echo init-ran > /run/bench-work/from-init"},
		VolumeMounts: []v1.VolumeMount{{Name: "work", MountPath: "/run/bench-work"}},
	}}
	create(ok)
	fails := shellPod(e.ns, "fails", v1.RestartPolicyNever, "exit 3")
	create(fails)
	onFailure := shellPod(e.ns, "onfailure", v1.RestartPolicyOnFailure,
		"if [ -f /run/bench-work/again ]; then exit 0; fi; touch /run/bench-work/again; exit 1")
	create(onFailure)
	live := shellPod(e.ns, "live", v1.RestartPolicyAlways, "sleep 300")
	live.Spec.Containers[0].LivenessProbe = &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(1)}},
		PeriodSeconds:    1,
		FailureThreshold: 2,
	}
	create(live)

	phase := func(name string, want v1.PodPhase) func() error {
		return func() error {
			if p := e.pod(t, name); p.Status.Phase != want {
				return fmt.Errorf("%s phase %q statuses %+v", name, p.Status.Phase, p.Status.ContainerStatuses)
			}
			return nil
		}
	}
	eventually(t, 30*time.Second, "ok Succeeded", phase("ok", v1.PodSucceeded))
	b, _ := os.ReadFile(e.k.PodLogPath(e.ns, "ok", "main"))
	if string(b) != "init-ran\nhost=ok\ne2eCA\ntoken\nread-only\n" {
		t.Fatalf("ok log %q", b)
	}
	p := e.pod(t, "ok")
	if st := p.Status.InitContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
		t.Fatalf("init statuses %+v", st)
	}

	eventually(t, 30*time.Second, "fails Failed", phase("fails", v1.PodFailed))
	if st := e.pod(t, "fails").Status.ContainerStatuses[0]; st.State.Terminated == nil || st.State.Terminated.ExitCode != 3 || st.RestartCount != 0 {
		t.Fatalf("fails status %+v", st)
	}

	eventually(t, 30*time.Second, "onfailure Succeeded after one restart", phase("onfailure", v1.PodSucceeded))
	if st := e.pod(t, "onfailure").Status.ContainerStatuses[0]; st.RestartCount != 1 || st.State.Terminated.ExitCode != 0 {
		t.Fatalf("onfailure status %+v", st)
	}

	eventually(t, 30*time.Second, "liveness restarts", func() error {
		st := e.pod(t, "live").Status.ContainerStatuses
		if len(st) == 0 || st[0].RestartCount < 1 {
			return fmt.Errorf("statuses %+v", st)
		}
		return nil
	})
	if e.pod(t, "live").Status.Phase != v1.PodRunning {
		t.Fatal("restartPolicy Always pod not Running")
	}
}

// TestE2EProvisionerCreatesPreboundPV checks the provisioner side of a PVC whose class
// binds immediately (envtest has no PV controller to finish the binding).
func TestE2EProvisionerCreatesPreboundPV(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "data"},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("manual"),
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resourceQty("2Gi")}},
		},
	}
	created, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// envtest has no PV controller, so set the phase it would report.
	created.Status.Phase = v1.ClaimPending
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "PV created", func() error {
		pv, err := e.cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(created.UID), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != created.UID || pv.Spec.StorageClassName != "manual" || pv.Spec.HostPath == nil {
			t.Fatalf("pv %+v", pv.Spec)
		}
		if q := pv.Spec.Capacity[v1.ResourceStorage]; q.String() != "2Gi" {
			t.Fatalf("capacity %s", q.String())
		}
		return nil
	})
	sc, err := e.cs.StorageV1().StorageClasses().Get(ctx, "bench-local", metav1.GetOptions{})
	if err != nil || sc.Annotations[annDefaultStorageClass] != "true" {
		t.Fatalf("default storage class: %v %v", sc, err)
	}
}
