//go:build integration

package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestPodsAdmittedUnderRestrictedPodSecurity creates every kind of pod the cluster
// controller makes (member pods plain, with TLS, with a claim and with a user's pod
// securityContext; the member that restores a backup; the first member of a quorum-loss
// recovery) in a namespace that enforces the Pod Security "restricted" profile, on a
// real API server. The backup pod has its own test in package etcdbackup.
func TestPodsAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	fixture.AdmittedUnderRestricted(t, func(ns string) map[string]*corev1.Pod { return restrictedTestPods(t, ns) })
}

// restrictedTestPods renders one pod of each kind the cluster controller creates, in
// namespace ns.
func restrictedTestPods(t *testing.T, ns string) map[string]*corev1.Pod {
	t.Helper()
	rd, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	cluster := func(name string) *etcdv1beta2.EtcdCluster {
		return &etcdv1beta2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
			Spec:       etcdv1beta2.EtcdClusterSpec{Size: 1, Version: "3.6.16"},
		}
	}
	member := func(c *etcdv1beta2.EtcdCluster) render.Member {
		name := c.Name + "-0000"
		return render.Member{Name: name, InitialClusterState: render.StateNew, InitialCluster: render.InitialClusterEntry(c, name, "")}
	}
	var restoreStep *render.RestoreStep // set for the restoring member only
	memberPod := func(c *etcdv1beta2.EtcdCluster, m render.Member) *corev1.Pod {
		objs, err := rd.Render(render.Input{Cluster: c, Members: []render.Member{m}, Restore: restoreStep})
		if err != nil {
			t.Fatalf("render %s: %v", c.Name, err)
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				return p
			}
		}
		t.Fatalf("render %s: no pod", c.Name)
		return nil
	}
	pods := map[string]*corev1.Pod{}

	plain := cluster("plain")
	pods["member"] = memberPod(plain, member(plain))

	tls := cluster("tls")
	tls.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"},
		OperatorSecret: "operator"}}
	pods["member with TLS"] = memberPod(tls, member(tls))

	claim := cluster("claim")
	claim.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	pods["member with a claim"] = memberPod(claim, member(claim))

	// A user's pod securityContext is kept; what it leaves unset still gets the defaults.
	user := cluster("user")
	user.Spec.Pod = &etcdv1beta2.PodPolicy{SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000), RunAsUser: ptr.To[int64](1000)}}
	pods["member with a user's securityContext"] = memberPod(user, member(user))

	restored := cluster("restored")
	src := render.RestoreSource{Restore: "r", UID: "uid-r", SHA256: strings.Repeat("a", 64),
		S3: &etcdv1beta2.S3BackupSource{Path: "bucket/key", AWSSecret: "aws"}}
	ann, err := src.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	restored.Annotations = ann
	restoreStep = &render.RestoreStep{Source: src, Image: "etcd-operator:v0.2.0"}
	pods["restoring member"] = memberPod(restored, member(restored))
	restoreStep = nil

	recovered := cluster("recovered")
	rm := member(recovered)
	rm.Recovery = &render.Recovery{SourceURL: "http://10.1.2.3:2379", MinRevision: 1, Token: "recovered-2", Image: "etcd-operator:v0.2.0"}
	pods["recovering member"] = memberPod(recovered, rm)

	for _, name := range []string{"restoring member", "recovering member"} {
		if len(pods[name].Spec.InitContainers) == 0 {
			t.Fatalf("%s: no init container rendered; the test would not cover it", name)
		}
	}
	return pods
}
