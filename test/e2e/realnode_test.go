package e2e

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestMemberAsAUserSeesIt checks what a user does first with a cluster on real nodes:
// `kubectl exec <member> -- etcdctl endpoint health` (etcdctl's default endpoint is
// 127.0.0.1:2379, so etcd must listen on loopback in its pod, not only on the pod IP),
// `kubectl logs <member>`, and a client pod that reaches the cluster through the
// `<cluster>-client` Service by its DNS name (CoreDNS, then kube-proxy's rules).
func TestMemberAsAUserSeesIt(t *testing.T) {
	e := framework.Setup(t)
	ctx := context.Background()
	const name = "usable"
	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 2*time.Minute)

	for podName := range e.MemberPods(name) {
		out, errOut, err := e.Bench.Exec(ctx, "default", podName, "etcd", "etcdctl", "endpoint", "health")
		if err != nil || !strings.Contains(out+errOut, "127.0.0.1:2379 is healthy") {
			t.Errorf("kubectl exec %s -- etcdctl endpoint health: %v\nstdout: %s\nstderr: %s", podName, err, out, errOut)
		}
		logs, err := e.Bench.PodLogs(ctx, "default", podName, "etcd")
		if err != nil || !strings.Contains(logs, `"msg":"serving client traffic`) {
			t.Errorf("kubectl logs %s: %v; etcd's log lacks its serving line:\n%.2000s", podName, err, logs)
		}
	}

	// A client pod, restricted like the members, writes through the client Service.
	svc := "http://" + render.ClientServiceName(e.Cluster(name)) + ":2379"
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "etcdctl", Image: "quay.io/coreos/etcd:v3.6.16",
				Command: []string{"etcdctl", "--endpoints", svc, "put", "from-a-pod", "through-the-service"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	e.Create(client)
	e.Eventually(90*time.Second, "the client pod to finish", func() error {
		var p corev1.Pod
		if err := e.C.Get(ctx, clientKey(client), &p); err != nil {
			return err
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			return nil
		case corev1.PodFailed:
			logs, _ := e.Bench.PodLogs(ctx, "default", "client", "etcdctl")
			t.Fatalf("client pod failed: %s", logs)
		}
		return errPhase(p.Status.Phase)
	})
	resp, err := e.EtcdClient(name).Get(ctx, "from-a-pod")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "through-the-service" {
		t.Fatalf("the client pod's write is not in the cluster: %v", resp.Kvs)
	}
}

// TestIPv6PrimaryCluster runs a cluster where every pod's primary IP, and every Service's
// ClusterIP, is IPv6 (the bench is dual-stack with IPv6 first): member URLs built from pod
// IPs must bracket them, etcd must listen on both families, and clients reach it through
// the client Service's IPv6 ClusterIP by DNS.
func TestIPv6PrimaryCluster(t *testing.T) {
	e := framework.SetupWithOptions(t, bench.Options{IPv6: true})
	ctx := context.Background()
	const name = "six"
	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 3*time.Minute)

	for podName, p := range e.MemberPods(name) {
		if ip := net.ParseIP(p.Status.PodIP); ip == nil || ip.To4() != nil {
			t.Errorf("pod %s has primary IP %q, want IPv6", podName, p.Status.PodIP)
		}
		out, errOut, err := e.Bench.Exec(ctx, "default", podName, "etcd", "etcdctl", "endpoint", "health")
		if err != nil || !strings.Contains(out+errOut, "127.0.0.1:2379 is healthy") {
			t.Errorf("kubectl exec %s -- etcdctl endpoint health: %v\n%s%s", podName, err, out, errOut)
		}
	}
	var svc corev1.Service
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: render.ClientServiceName(e.Cluster(name))}, &svc); err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(svc.Spec.ClusterIP); ip == nil || ip.To4() != nil {
		t.Errorf("client Service ClusterIP %q, want IPv6", svc.Spec.ClusterIP)
	}
	cli := e.EtcdClient(name)
	if _, err := cli.Put(ctx, "family", "six"); err != nil {
		t.Fatalf("put through the client Service: %v", err)
	}
	// Scale through learners: the operator adds and promotes a member it dials by its
	// IPv6 pod IP.
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 5 })
	e.WaitAvailable(name, 5, 3*time.Minute)
	resp, err := cli.Get(ctx, "family")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "six" {
		t.Fatalf("get after scaling: %v %v", resp, err)
	}
}
