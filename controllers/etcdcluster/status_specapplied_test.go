package etcdcluster

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/render"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// createdPod is the pod the operator creates for member name of c: rendered and stamped.
func createdPod(t *testing.T, c *etcdv1beta2.EtcdCluster, name string) *corev1.Pod {
	t.Helper()
	p := memberPod(t, c, name, corev1.PodStatus{})
	stampSpecFingerprint(p, c, "")
	return p
}

// coreOSShaped gives a pod the marks of CoreOS etcd-operator 0.9.4's member pods.
func coreOSShaped(p *corev1.Pod) {
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.InitContainers = []corev1.Container{{Name: "check-dns", Image: "busybox:1.28.0-glibc",
		Command: []string{"/bin/sh", "-c", "until nslookup x; do sleep 1; done"}}}
}

func TestStaleSpecFields(t *testing.T) {
	base := func() *etcdv1beta2.EtcdCluster {
		c := statusCluster("spec", "3.6.16")
		c.Spec.Size = 3
		c.Spec.Pod = &etcdv1beta2.PodPolicy{Labels: map[string]string{"team": "a"}, NodeSelector: map[string]string{"disk": "ssd"}}
		return c
	}
	withTLS := func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
			Member: &etcdv1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"}, OperatorSecret: "op"}}
	}
	unstamped := func(p *corev1.Pod) { delete(p.Annotations, AnnotationSpecFingerprint) }
	for _, tc := range []struct {
		name    string
		created func(c *etcdv1beta2.EtcdCluster) // the spec the pod was created from
		pod     func(p *corev1.Pod)              // what happened to the pod since
		now     func(c *etcdv1beta2.EtcdCluster) // the spec now
		want    []string
	}{
		{name: "unchanged", now: func(*etcdv1beta2.EtcdCluster) {}},
		{name: "size and version are applied by scaling and upgrades", now: func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Size, c.Spec.Version = 5, "3.7.3"
		}},
		{name: "repository", now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Repository = "mirror.example/etcd" },
			want: []string{"repository"}},
		{name: "repository set to its default is no change", now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Repository = etcdv1beta2.DefaultRepository }},
		{name: "repository applied by an upgrade", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "mirror.example/etcd:v3.7.3" },
			now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Repository, c.Spec.Version = "mirror.example/etcd", "3.7.3" }},
		{name: "repository with a registry port", created: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Repository = "reg.example:5000/etcd" },
			now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Repository = "reg.example:5000/etcd" }},
		{name: "typed etcd settings apply to new members only", now: func(c *etcdv1beta2.EtcdCluster) {
			c.Annotations = map[string]string{etcdv1beta2.AutoCompactionRetentionAnnotation: "1h", etcdv1beta2.QuotaBackendBytesAnnotation: "4294967296"}
		}, want: []string{etcdv1beta2.QuotaBackendBytesAnnotation, etcdv1beta2.AutoCompactionRetentionAnnotation}},
		{name: "typed etcd settings unchanged", created: func(c *etcdv1beta2.EtcdCluster) {
			c.Annotations = map[string]string{etcdv1beta2.AutoCompactionModeAnnotation: "revision"}
		}, now: func(c *etcdv1beta2.EtcdCluster) {
			c.Annotations = map[string]string{etcdv1beta2.AutoCompactionModeAnnotation: "revision"}
		}},
		{name: "pod annotations", now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.Annotations = map[string]string{"scrape": "true"} },
			want: []string{"pod.annotations"}},
		{name: "resources", now: func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Pod.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, want: []string{"pod.resources"}},
		{name: "several fields, in spec order", now: func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Repository = "mirror.example/etcd"
			c.Spec.Pod.Labels = map[string]string{"team": "b"}
			c.Spec.Pod.EtcdEnv = []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"}}
		}, want: []string{"repository", "pod.labels", "pod.etcdEnv"}},
		{name: "an empty map is no change", now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.Annotations = map[string]string{} }},
		{name: "claim spec", now: func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Pod.PersistentVolumeClaimSpec = &corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}
		}, want: []string{"pod.persistentVolumeClaimSpec"}},
		{name: "TLS secrets", created: withTLS, now: func(c *etcdv1beta2.EtcdCluster) {
			withTLS(c)
			c.Spec.TLS.Static.Member.PeerSecret = "peer-2"
		}, want: []string{"TLS.static.member.peerSecret"}},
		{name: "TLS added", now: withTLS, want: []string{"TLS.static.member.peerSecret", "TLS.static.member.serverSecret"}},
		{name: "the operator's client secret is used at once", created: withTLS, now: func(c *etcdv1beta2.EtcdCluster) {
			withTLS(c)
			c.Spec.TLS.Static.OperatorSecret = "op-2"
		}},
		{name: "a pod created before fingerprints: what the pod shows is compared", pod: unstamped, now: func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Repository = "mirror.example/etcd"
			c.Spec.Pod.NodeSelector = map[string]string{"disk": "nvme"}
			c.Spec.Pod.Labels["tier"] = "db"
		}, want: []string{"repository", "pod.labels", "pod.nodeSelector"}},
		{name: "a pod created before fingerprints: labels others added are no change", pod: func(p *corev1.Pod) {
			unstamped(p)
			p.Labels["added-by"] = "someone"
			p.Annotations["sidecar.example/status"] = "injected"
		}, now: func(*etcdv1beta2.EtcdCluster) {}},
		{name: "a pod CoreOS etcd-operator made (restartPolicy Never, check-dns) is not of our shape", pod: func(p *corev1.Pod) {
			unstamped(p)
			coreOSShaped(p)
		}, now: func(*etcdv1beta2.EtcdCluster) {}, want: []string{fieldCoreOSPodShape}},
		{name: "restartPolicy Never alone marks a CoreOS pod", pod: func(p *corev1.Pod) {
			unstamped(p)
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
		}, now: func(*etcdv1beta2.EtcdCluster) {}, want: []string{fieldCoreOSPodShape}},
		{name: "a check-dns init container alone marks a CoreOS pod", pod: func(p *corev1.Pod) {
			unstamped(p)
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "check-dns", Image: "busybox:1.28.0-glibc"})
		}, now: func(*etcdv1beta2.EtcdCluster) {}, want: []string{fieldCoreOSPodShape}},
		{name: "a CoreOS pod is also compared on what it shows", pod: func(p *corev1.Pod) {
			unstamped(p)
			coreOSShaped(p)
		}, now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Repository = "mirror.example/etcd" },
			want: []string{"repository", fieldCoreOSPodShape}},
		{name: "our own pods are never taken for CoreOS's, whatever they show", pod: coreOSShaped,
			now: func(*etcdv1beta2.EtcdCluster) {}},
		{name: "an unreadable fingerprint is treated as none", pod: func(p *corev1.Pod) { p.Annotations[AnnotationSpecFingerprint] = "{not json" },
			now: func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.NodeSelector = nil }, want: []string{"pod.nodeSelector"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			if tc.created != nil {
				tc.created(c)
			}
			p := createdPod(t, c, "spec-a")
			if tc.pod != nil {
				tc.pod(p)
			}
			now := base()
			tc.now(now)
			if got := staleSpecFields(now, "", p, ""); !slices.Equal(got, tc.want) {
				t.Errorf("stale fields %v, want %v", got, tc.want)
			}
		})
	}
}

// A changed claim spec on a running cluster is reported, naming the field, and no pod
// is touched.
func TestReconcileReportsSpecAppliedToNewMembersOnly(t *testing.T) {
	c := statusCluster("applied", "3.6.16")
	f := newClusterFixture(t, nil, c)
	f.reconcile(t, c.Name) // bootstrap: creates the pod
	var pods corev1.PodList
	if err := f.c.List(context.Background(), &pods, client.InNamespace("default")); err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods after bootstrap: %v %v", len(pods.Items), err)
	}
	// The member runs etcd: a running cluster, not a bootstrap stuck on its image (whose
	// pods would rightly get a corrected image in place).
	running := pods.Items[0]
	running.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: render.ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	if err := f.c.Status().Update(context.Background(), &running); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(&running), &running); err != nil {
		t.Fatal(err)
	}
	before := running
	wantClusterCondition(t, f.cluster(t, c.Name), etcdv1beta2.ClusterConditionSpecApplied, corev1.ConditionTrue, etcdv1beta2.ReasonSpecApplied)

	cl := f.cluster(t, c.Name)
	// A claim spec is not rolled out (rolling reconfiguration recreates pods on the
	// claims they have); it reaches new members only.
	cl.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
	cl.Generation++
	if err := f.c.Update(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	f.events()
	f.reconcile(t, c.Name)
	wantClusterCondition(t, f.cluster(t, c.Name), etcdv1beta2.ClusterConditionSpecApplied, corev1.ConditionFalse,
		etcdv1beta2.ReasonAppliesToNewMembersOnly, "pod.persistentVolumeClaimSpec", before.Name)
	if ev := f.events(); countContaining(ev, etcdv1beta2.ReasonAppliesToNewMembersOnly) != 1 {
		t.Errorf("events %v, want one %s", ev, etcdv1beta2.ReasonAppliesToNewMembersOnly)
	}
	var after corev1.Pod
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(&before), &after); err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the member pod was changed or replaced by a spec change that applies to new members only")
	}
}

func TestSpecAppliedConditionOf(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.EtcdClusterSpec{Size: 1, Version: "3.6.16"}}
	growing := &storageReport{Reason: etcdv1beta2.ReasonClaimsExpanding, Message: "1 of 2"}
	const typ = etcdv1beta2.ClusterConditionSpecApplied
	applied := conditionUpdate{Type: typ, Status: true, Reason: etcdv1beta2.ReasonSpecApplied, Recovered: true}
	for _, tc := range []struct {
		name string
		o    *observation
		want conditionUpdate
	}{
		{"applied", &observation{}, applied},
		{"TLS change refused, nothing stale", &observation{tlsRefusal: "no"}, applied},
		{"claims growing", &observation{claimReport: growing}, conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonClaimsExpanding}},
		{"TLS change refused", &observation{tlsRefusal: "no", claimReport: growing},
			conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonTLSChangeRefused, Fail: etcdv1beta2.ReasonTLSChangeRefused + ":no"}},
		{"turning TLS on", &observation{tlsProgress: "step 1 of 3"}, conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonRollingOut}},
	} {
		wantUpdate(t, tc.name, specAppliedConditionOf(c, "cluster.local", tc.o), tc.want)
	}
}
