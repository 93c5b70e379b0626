package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// This file makes etcd clusters the way CoreOS etcd-operator 0.9.4 made them (facts read
// from its pkg/util/k8sutil, pkg/util/etcdutil and pkg/cluster at tag v0.9.4), with
// CoreOS's operator never running: the real 0.9.4 binary is not built here (its tag has
// no vendor directory, only a dep Gopkg.lock pinning Kubernetes 1.10-era libraries by
// revision, and it creates its CRD through apiextensions v1beta1, which Kubernetes
// removed in 1.22), so each step it took is taken here in its order.

// coreOSEtcdVersion is the etcd the CoreOS-made clusters run unless a case names
// another (etcd35). CoreOS's clusters of the time ran 3.2-3.4; the bench has 3.5.36,
// 3.6.16 and 3.7.3, whose flags include the ones CoreOS passed.
const coreOSEtcdVersion = "3.6.16"

// coreOSEtcdRepository is spec.repository of the CoreOS-made clusters: the bench's etcd
// with a shell, which CoreOS's exec probes need (its image of the time had one). A
// bench-only name, so that no other test's etcd image changes.
const coreOSEtcdRepository = images.BenchHost + "/etcd-with-shell"

// coreOSDNSSuffix is the one change from CoreOS's pod: its check-dns looked up
// <pod>.<cluster>.<ns>.svc, which busybox 1.28.0-glibc resolved through the search
// domains; Debian's busybox applies them only to names without a dot (see
// images.busyboxApplets), so the bench's cluster domain is named.
const coreOSDNSSuffix = ".cluster.local"

// CoreOS's pod and service facts.
const (
	coreOSDataDir          = "/var/etcd/data"
	coreOSVolumeName       = "etcd-data"
	coreOSVolumeMountDir   = "/var/etcd"
	coreOSVersionKey       = "etcd.version"
	coreOSTolerateUnready  = "service.alpha.kubernetes.io/tolerate-unready-endpoints"
	coreOSMemberNameSuffix = 10
)

// pushCoreOSImages makes the bench serve the images CoreOS-made pods run: busybox under
// the short name CoreOS defaulted to, and the etcd with a shell.
func pushCoreOSImages(t *testing.T, e *framework.Env) {
	t.Helper()
	cache := testenv.CacheDir()
	bb, err := images.Busybox(cache)
	if err != nil {
		t.Fatalf("busybox-static: %v", err)
	}
	img, err := images.BusyboxImage(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Bench.PushImage(images.CoreOSBusyboxImage, img); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{coreOSEtcdVersion, etcd35} {
		etcdImg, err := images.EtcdWithShellImage(cache, "v"+v, bb)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Bench.PushImage(coreOSEtcdRepository+":v"+v, etcdImg); err != nil {
			t.Fatal(err)
		}
	}
}

// coreOSCluster is a cluster made as CoreOS made it.
type coreOSCluster struct {
	Name    string
	Version string   // etcd's, as spec.version spells it
	Members []string // pod = member names, in the order they were added
	UID     string
}

// createCoreOSCluster creates the EtcdCluster as a CoreOS user wrote it, then does what
// CoreOS's operator did for it: the two Services, one seed member bootstrapping a new
// cluster, then one member at a time added through the member API and started with
// initial-cluster-state existing, and finally the status it wrote.
func createCoreOSCluster(t *testing.T, e *framework.Env, name string, size int, version string) *coreOSCluster {
	t.Helper()
	cr := &etcdv1beta2.EtcdCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: size, Version: version, Repository: coreOSEtcdRepository},
	}
	e.Create(cr)
	owner := metav1.OwnerReference{
		APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster",
		Name: name, UID: cr.UID, Controller: ptr.To(true),
	}
	// Kubernetes of CoreOS's time published the peer Service's not-ready addresses for its
	// tolerate-unready-endpoints annotation, so a starting member's check-dns found its
	// own name; today's ignores the annotation. The field stands in for it while members
	// are created and is taken off afterwards, leaving the Service as CoreOS wrote it.
	createCoreOSService(t, e, name+"-client", name, "", owner, false)
	createCoreOSService(t, e, name, name, corev1.ClusterIPNone, owner, true)

	cc := &coreOSCluster{Name: name, Version: version, UID: string(cr.UID)}
	seed := coreOSMemberName(name)
	createCoreOSPod(t, e, cc, seed, []string{seed}, "new", owner)
	waitPodReady(t, e, seed)
	cc.Members = append(cc.Members, seed)
	for len(cc.Members) < size {
		m := coreOSMemberName(name)
		addMemberAsCoreOS(t, e, cc, m)
		createCoreOSPod(t, e, cc, m, append(append([]string(nil), cc.Members...), m), "existing", owner)
		waitPodReady(t, e, m)
		cc.Members = append(cc.Members, m)
	}
	setPublishNotReady(t, e, name, false)
	writeCoreOSStatus(t, e, cc)
	return cc
}

// coreOSMemberName is <cluster>-<10 random characters>, from the same alphabet CoreOS
// drew from (apimachinery's rand.String).
func coreOSMemberName(cluster string) string {
	return cluster + "-" + utilrand.String(coreOSMemberNameSuffix)
}

func coreOSPeerURL(cluster, member string) string {
	return fmt.Sprintf("http://%s.%s.default.svc:2380", member, cluster)
}

func coreOSLabels(cluster string) map[string]string {
	return map[string]string{"app": "etcd", "etcd_cluster": cluster}
}

func createCoreOSService(t *testing.T, e *framework.Env, svcName, cluster, clusterIP string, owner metav1.OwnerReference, peer bool) {
	t.Helper()
	ports := []corev1.ServicePort{{Name: "client", Port: 2379, TargetPort: intstr.FromInt(2379), Protocol: corev1.ProtocolTCP}}
	if peer {
		ports = append(ports, corev1.ServicePort{Name: "peer", Port: 2380, TargetPort: intstr.FromInt(2380), Protocol: corev1.ProtocolTCP})
	}
	e.Create(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: svcName, Namespace: "default", Labels: coreOSLabels(cluster),
			Annotations:     map[string]string{coreOSTolerateUnready: "true"},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.ServiceSpec{
			Ports: ports, Selector: coreOSLabels(cluster), ClusterIP: clusterIP,
			PublishNotReadyAddresses: peer,
		},
	})
}

func setPublishNotReady(t *testing.T, e *framework.Env, name string, on bool) {
	t.Helper()
	var svc corev1.Service
	if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.PublishNotReadyAddresses = on
	if err := e.C.Update(context.Background(), &svc); err != nil {
		t.Fatal(err)
	}
}

// coreOSPod is the member pod CoreOS 0.9.4 created for a cluster without TLS, pod
// policy or claim.
func coreOSPod(cluster, version, member string, initial []string, state string, owner metav1.OwnerReference) *corev1.Pod {
	pairs := make([]string, len(initial))
	for i, m := range initial {
		pairs[i] = m + "=" + coreOSPeerURL(cluster, m)
	}
	clientURL := fmt.Sprintf("http://%s.%s.default.svc:2379", member, cluster)
	cmd := []string{"/usr/local/bin/etcd",
		"--data-dir=" + coreOSDataDir, "--name=" + member,
		"--initial-advertise-peer-urls=" + coreOSPeerURL(cluster, member),
		"--listen-peer-urls=http://0.0.0.0:2380", "--listen-client-urls=http://0.0.0.0:2379",
		"--advertise-client-urls=" + clientURL,
		"--initial-cluster=" + strings.Join(pairs, ","),
		"--initial-cluster-state=" + state,
	}
	if state == "new" {
		cmd = append(cmd, "--initial-cluster-token="+string(uuid.NewUUID()))
	}
	probe := func(initialDelay, timeout, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
				Command: []string{"/bin/sh", "-ec", "ETCDCTL_API=3 etcdctl endpoint status"},
			}},
			InitialDelaySeconds: initialDelay, TimeoutSeconds: timeout, PeriodSeconds: period, FailureThreshold: 3,
		}
	}
	mounts := []corev1.VolumeMount{{Name: coreOSVolumeName, MountPath: coreOSVolumeMountDir}}
	labels := coreOSLabels(cluster)
	labels["etcd_node"] = member
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: member, Namespace: "default", Labels: labels,
			Annotations:     map[string]string{coreOSVersionKey: version},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{
				Name:    "check-dns",
				Image:   images.CoreOSBusyboxImage,
				Command: []string{"/bin/sh", "-c", checkDNSScript(member + "." + cluster + ".default.svc" + coreOSDNSSuffix)},
			}},
			Containers: []corev1.Container{{
				Name:    "etcd",
				Image:   coreOSEtcdRepository + ":v" + version,
				Command: cmd,
				Ports: []corev1.ContainerPort{
					{Name: "server", ContainerPort: 2380, Protocol: corev1.ProtocolTCP},
					{Name: "client", ContainerPort: 2379, Protocol: corev1.ProtocolTCP},
				},
				VolumeMounts:   mounts,
				LivenessProbe:  probe(10, 10, 60),
				ReadinessProbe: probe(1, 5, 5),
			}},
			RestartPolicy:                corev1.RestartPolicyNever,
			Volumes:                      []corev1.Volume{{Name: coreOSVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Hostname:                     member,
			Subdomain:                    cluster,
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
}

// checkDNSScript waits until the member's own DNS name resolves; with CoreOS's default
// DNSTimeoutInSecond (0) it waits as long as it takes.
func checkDNSScript(addr string) string {
	return fmt.Sprintf(`left=0
until nslookup %s; do
  left=$((left-1))
  if [ "$left" -eq 0 ]; then echo "Timed out waiting for DNS entry"; exit 1; fi
  sleep 1
done`, addr)
}

func createCoreOSPod(t *testing.T, e *framework.Env, cc *coreOSCluster, member string, initial []string, state string, owner metav1.OwnerReference) {
	t.Helper()
	e.Create(coreOSPod(cc.Name, cc.Version, member, initial, state, owner))
}

func waitPodReady(t *testing.T, e *framework.Env, name string) {
	t.Helper()
	e.Eventually(3*time.Minute, "pod "+name+" ready", func() error {
		var p corev1.Pod
		if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &p); err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			e.DumpState()
			t.Fatalf("pod %s ended: %s", name, p.Status.Phase)
		}
		if !framework.PodReady(&p) {
			return fmt.Errorf("pod %s not ready (%s)", name, p.Status.Phase)
		}
		return nil
	})
}

// addMemberAsCoreOS adds the member's peer URL through the member API, as CoreOS did
// before creating a joining member's pod.
func addMemberAsCoreOS(t *testing.T, e *framework.Env, cc *coreOSCluster, member string) {
	t.Helper()
	e.Eventually(time.Minute, "member add "+member, func() error {
		cli, err := clientv3.New(clientv3.Config{Endpoints: podEndpoints(t, e, cc.Members), DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = cli.MemberAdd(ctx, []string{coreOSPeerURL(cc.Name, member)})
		return err
	})
}

// podEndpoints are the client URLs of the named pods, by IP.
func podEndpoints(t *testing.T, e *framework.Env, pods []string) []string {
	t.Helper()
	var eps []string
	for _, n := range pods {
		var p corev1.Pod
		if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: n}, &p); err == nil && p.Status.PodIP != "" {
			eps = append(eps, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(2379)))
		}
	}
	return eps
}

// writeCoreOSStatus writes the status CoreOS's operator kept for a healthy cluster.
// (CoreOS had no status subresource and wrote it with the object; ours has one.)
func writeCoreOSStatus(t *testing.T, e *framework.Env, cc *coreOSCluster) {
	t.Helper()
	name, members := cc.Name, cc.Members
	updateStatus(t, e, name, func(st *etcdv1beta2.EtcdClusterStatus) {
		now := time.Now().UTC().Format(time.RFC3339)
		*st = etcdv1beta2.EtcdClusterStatus{
			Phase:       etcdv1beta2.ClusterPhaseRunning,
			Size:        len(members),
			ServiceName: name + "-client",
			ClientPort:  2379,
			Members:     etcdv1beta2.MembersStatus{Ready: append([]string(nil), members...)},
			Conditions: []etcdv1beta2.ClusterCondition{{
				Type: etcdv1beta2.ClusterConditionAvailable, Status: corev1.ConditionTrue,
				Reason: "Cluster available", LastUpdateTime: now, LastTransitionTime: now,
			}},
			CurrentVersion: cc.Version,
		}
	})
}

func updateStatus(t *testing.T, e *framework.Env, name string, mutate func(*etcdv1beta2.EtcdClusterStatus)) {
	t.Helper()
	c := e.Cluster(name)
	mutate(&c.Status)
	if err := e.C.Status().Update(context.Background(), c); err != nil {
		t.Fatalf("status of %s: %v", name, err)
	}
}
