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
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestPlatformOptions creates a 3-member cluster with claims and the options a platform
// team sets (v1beta2 annotations; v1's fields convert to them): a PriorityClass, a pull
// secret for etcd's image in a registry that requires a login (a pod without it is
// refused the pull), a topology spread of one member per zone over the bench's three zones, and a
// NodePort client Service. The members land in three zones with the priority resolved
// by the API server, and etcd answers through a node's IP at the node port (the node's
// kube-proxy). Then the priority class changes on the running cluster under a write
// load: the member pods are recreated on their claims one at a time (same members),
// every new pod has the new class, no acknowledged write fails or is lost, and the node
// port stays the one allocated. Last, the client Service changes to LoadBalancer (with
// externalTrafficPolicy Local; served on the same node port) and back to ClusterIP in
// place, answering each time, without touching the members.
func TestPlatformOptions(t *testing.T) {
	e := framework.Setup(t)
	ctx := context.Background()
	const name = "knobs"
	for class, value := range map[string]int32{"etcd-knobs-a": 1000, "etcd-knobs-b": 2000} {
		e.Create(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: value})
	}
	// etcd from a registry that requires a login: the bench registry's private copy of
	// the image, which a pod without the pull secret cannot pull.
	image, err := e.Bench.PrivateImage(etcdv1beta2.DefaultRepository + ":v3.6.16")
	if err != nil {
		t.Fatal(err)
	}
	refusedPull(t, e, image)
	secret, err := e.Bench.PullSecret("default", "regcred")
	if err != nil {
		t.Fatal(err)
	}
	e.Create(secret)

	c := newCluster(name, 3)
	c.Spec.Repository = strings.TrimSuffix(image, ":v3.6.16")
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: claimSpec()}
	c.Annotations = map[string]string{
		etcdv1beta2.PodPriorityClassNameAnnotation:         "etcd-knobs-a",
		etcdv1beta2.PodImagePullSecretsAnnotation:          `[{"name":"regcred"}]`,
		etcdv1beta2.PodTopologySpreadConstraintsAnnotation: `[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]`,
		etcdv1beta2.ClientServiceTypeAnnotation:            "NodePort",
	}
	e.Create(c)
	e.WaitAvailable(name, 3, 180*time.Second)

	zoneOf := func(node string) string {
		var n corev1.Node
		if err := e.C.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			t.Fatalf("node %s: %v", node, err)
		}
		return n.Labels["topology.kubernetes.io/zone"]
	}
	checkPods := func(class string, priority int32) {
		t.Helper()
		zones := map[string]string{}
		for n, p := range e.MemberPods(name) {
			s := p.Spec
			if s.PriorityClassName != class || s.Priority == nil || *s.Priority != priority {
				t.Errorf("pod %s: priorityClassName %q priority %v, want %s (%d)", n, s.PriorityClassName, s.Priority, class, priority)
			}
			if len(s.ImagePullSecrets) != 1 || s.ImagePullSecrets[0].Name != "regcred" {
				t.Errorf("pod %s: imagePullSecrets %v", n, s.ImagePullSecrets)
			}
			if s.Containers[0].Image != image {
				t.Errorf("pod %s runs %s, want the private %s", n, s.Containers[0].Image, image)
			}
			if len(s.TopologySpreadConstraints) != 1 {
				t.Errorf("pod %s: topologySpreadConstraints %v", n, s.TopologySpreadConstraints)
			}
			z := zoneOf(s.NodeName)
			if other, ok := zones[z]; ok || z == "" {
				t.Errorf("pods %s and %s share zone %q", n, other, z)
			}
			zones[z] = n
		}
		t.Logf("members by zone: %v", zones)
	}
	checkPods("etcd-knobs-a", 1000)

	// The client Service is a NodePort one; etcd answers on a node's IP at that port.
	var svc corev1.Service
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: render.ClientServiceName(c)}, &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("client service %+v", svc.Spec)
	}
	nodePort := svc.Spec.Ports[0].NodePort
	var peer corev1.Service
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &peer); err != nil {
		t.Fatal(err)
	}
	if peer.Spec.Type != corev1.ServiceTypeClusterIP || peer.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("peer service is no longer headless: %+v", peer.Spec)
	}
	viaNodePort(t, e, nodePort, "through-node-port", "1")

	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	roll := watchRoll(e, name)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations[etcdv1beta2.PodPriorityClassNameAnnotation] = "etcd-knobs-b"
	})
	e.Eventually(400*time.Second, "every member pod recreated with the new priority class", func() error {
		pods := e.MemberPods(name)
		if err := roll.sample(pods); err != nil {
			return err
		}
		for n := range roll.oldUID {
			if p := pods[n]; p.Spec.PriorityClassName != "etcd-knobs-b" {
				return fmt.Errorf("pod %s has priority class %q", n, p.Spec.PriorityClassName)
			}
		}
		return nil
	})
	roll.doneOnSameMembers(t, e, name, before)
	t.Logf("recreated in order %v, at most %d away at once", roll.order, roll.worst)
	flowing(t, load, 2*loadRate)
	verifyLoad(t, load)
	checkPods("etcd-knobs-b", 2000)

	if err := e.C.Get(ctx, client.ObjectKeyFromObject(&svc), &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Ports[0].NodePort != nodePort {
		t.Errorf("node port changed from %d to %d", nodePort, svc.Spec.Ports[0].NodePort)
	}
	viaNodePort(t, e, nodePort, "through-node-port", "2")

	// The Service changes type in place: LoadBalancer with externalTrafficPolicy Local
	// (the bench has no load balancer controller, so it is served on its node port, the
	// same one, by every node with a member), then back to ClusterIP.
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations[etcdv1beta2.ClientServiceTypeAnnotation] = "LoadBalancer"
		c.Annotations[etcdv1beta2.ClientServiceExternalTrafficPolicyAnnotation] = "Local"
		c.Annotations[etcdv1beta2.ClientServiceAnnotationsAnnotation] = `{"lb.example/scheme":"internal"}`
	})
	e.Eventually(60*time.Second, "client Service of type LoadBalancer", func() error {
		if err := e.C.Get(ctx, client.ObjectKeyFromObject(&svc), &svc); err != nil {
			return err
		}
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal ||
			svc.Annotations["lb.example/scheme"] != "internal" {
			return fmt.Errorf("client service %s %s %v", svc.Spec.Type, svc.Spec.ExternalTrafficPolicy, svc.Annotations)
		}
		return nil
	})
	if svc.Spec.Ports[0].NodePort != nodePort || svc.Spec.HealthCheckNodePort == 0 {
		t.Errorf("LoadBalancer: node port %d (was %d), health check node port %d", svc.Spec.Ports[0].NodePort, nodePort, svc.Spec.HealthCheckNodePort)
	}
	viaNodePort(t, e, nodePort, "through-load-balancer-port", "3")

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		delete(c.Annotations, etcdv1beta2.ClientServiceTypeAnnotation)
		delete(c.Annotations, etcdv1beta2.ClientServiceExternalTrafficPolicyAnnotation)
	})
	e.Eventually(60*time.Second, "client Service of type ClusterIP again", func() error {
		if err := e.C.Get(ctx, client.ObjectKeyFromObject(&svc), &svc); err != nil {
			return err
		}
		if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].NodePort != 0 || svc.Spec.ExternalTrafficPolicy != "" {
			return fmt.Errorf("client service %+v", svc.Spec)
		}
		return nil
	})
	cli := e.EtcdClient(name)
	e.Eventually(60*time.Second, "etcd answers through the ClusterIP Service", func() error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, "through-cluster-ip", "4")
		return err
	})
	if cl := e.Cluster(name); !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionSpecApplied) {
		t.Errorf("SpecApplied after Service changes: %s", conditionReason(cl, etcdv1beta2.ClusterConditionSpecApplied))
	}
}

// viaNodePort writes key=value through the first node's InternalIP at port and reads
// it back there.
func viaNodePort(t *testing.T, e *framework.Env, port int32, key, value string) {
	t.Helper()
	var nodes corev1.NodeList
	if err := e.C.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	ip := ""
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && ip == "" {
				ip = a.Address
			}
		}
	}
	if ip == "" {
		t.Fatal("no node has an InternalIP")
	}
	ep := "http://" + net.JoinHostPort(ip, strconv.Itoa(int(port)))
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client %s: %v", ep, err)
	}
	defer cli.Close()
	e.Eventually(60*time.Second, "etcd answers at "+ep, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cli.Put(ctx, key, value); err != nil {
			return err
		}
		r, err := cli.Get(ctx, key)
		if err != nil {
			return err
		}
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != value {
			return fmt.Errorf("read %v", r.Kvs)
		}
		return nil
	})
}

// refusedPull runs a pod of image without a pull secret and waits for the kubelet to
// report the pull refused by the registry (ErrImagePull with its 401, then
// ImagePullBackOff); the pod is removed.
func refusedPull(t *testing.T, e *framework.Env, image string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "no-pull-secret", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: image}}}}
	e.Create(p)
	e.Eventually(90*time.Second, "the pull without a pull secret refused", func() error {
		if err := e.C.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				t.Logf("without a pull secret: %s: %s", w.Reason, w.Message)
				// Refused for the login, not for a missing image (after the first
				// refusal the back-off's message no longer says why).
				if w.Reason == "ErrImagePull" && !strings.Contains(w.Message, "401") {
					t.Fatalf("the pull failed for another reason than the missing login: %s", w.Message)
				}
				return nil
			}
			if cs.State.Running != nil {
				t.Fatalf("pod %s pulled %s without a pull secret", p.Name, image)
			}
		}
		return fmt.Errorf("pod %s: %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	if err := e.C.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}
