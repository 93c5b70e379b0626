package render

import (
	"crypto/x509"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
)

// sharedRenderer is parsed once; Render must be reusable and safe for concurrent use.
var sharedRenderer = func() *Renderer {
	r, err := New()
	if err != nil {
		panic(err)
	}
	return r
}()

// coreosSample is CoreOS's example-etcd-cluster: size 3, default repository.
func coreosSample(version string) *v1beta2.EtcdCluster {
	return &v1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "default", UID: "0b1e5c7a-uid"},
		Spec:       v1beta2.EtcdClusterSpec{Size: 3, Version: version},
	}
}

// bootstrap returns members m-0..m-(n-1) of c bootstrapping a new cluster.
func bootstrap(c *v1beta2.EtcdCluster, n int, domain string) []Member {
	var names []string
	for i := 0; i < n; i++ {
		names = append(names, fmt.Sprintf("%s-%04d", c.Name, i))
	}
	ic := InitialCluster(c, names, domain)
	ms := make([]Member, n)
	for i, name := range names {
		ms[i] = Member{Name: name, InitialClusterState: StateNew, InitialCluster: ic}
	}
	return ms
}

type rendered struct {
	all      []client.Object
	services map[string]*corev1.Service
	pdb      *policyv1.PodDisruptionBudget
	pvcs     map[string]*corev1.PersistentVolumeClaim
	pods     map[string]*corev1.Pod
}

func mustRender(t *testing.T, in Input) rendered {
	t.Helper()
	objs, err := sharedRenderer.Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	out := rendered{all: objs, services: map[string]*corev1.Service{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}, pods: map[string]*corev1.Pod{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			out.services[o.Name] = o
		case *policyv1.PodDisruptionBudget:
			if out.pdb != nil {
				t.Fatalf("two PodDisruptionBudgets")
			}
			out.pdb = o
		case *corev1.PersistentVolumeClaim:
			out.pvcs[o.Name] = o
		case *corev1.Pod:
			out.pods[o.Name] = o
		default:
			t.Fatalf("unexpected object %T", o)
		}
	}
	return out
}

func etcdContainer(t *testing.T, p *corev1.Pod) corev1.Container {
	t.Helper()
	if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != ContainerName {
		t.Fatalf("pod %s: want exactly one container %q, got %+v", p.Name, ContainerName, p.Spec.Containers)
	}
	return p.Spec.Containers[0]
}

// flag returns the value of --name=value in args, and whether it occurs (exactly once).
func flag(t *testing.T, args []string, name string) (string, bool) {
	t.Helper()
	var vals []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			vals = append(vals, v)
		}
	}
	if len(vals) > 1 {
		t.Fatalf("flag --%s given %d times: %v", name, len(vals), args)
	}
	if len(vals) == 0 {
		return "", false
	}
	return vals[0], true
}

func TestRenderCoreOSSample(t *testing.T) {
	c := coreosSample("3.6.16")
	members := bootstrap(c, 3, "")
	members[0].ID = "8E9E05C52164694D" // IDs are recorded in lower case
	got := mustRender(t, Input{Cluster: c, Members: members})

	// Order: Services, PDB, then pods in member order.
	var order []string
	for _, o := range got.all {
		order = append(order, fmt.Sprintf("%s/%s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName()))
		if o.GetNamespace() != "default" {
			t.Errorf("%s/%s: namespace %q, want default", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), o.GetNamespace())
		}
		if len(o.GetOwnerReferences()) != 0 {
			t.Errorf("%s: the chart must not set owner references", o.GetName())
		}
	}
	wantOrder := []string{"Service/example", "Service/example-client", "PodDisruptionBudget/example", "Pod/example-0000", "Pod/example-0001", "Pod/example-0002"}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Fatalf("objects = %v, want %v", order, wantOrder)
	}

	// Headless Service.
	hs := got.services["example"]
	if hs.Spec.ClusterIP != corev1.ClusterIPNone || !hs.Spec.PublishNotReadyAddresses {
		t.Errorf("headless service: clusterIP %q publishNotReady %v", hs.Spec.ClusterIP, hs.Spec.PublishNotReadyAddresses)
	}
	wantPorts := map[string]int32{"client": 2379, "peer": 2380}
	if len(hs.Spec.Ports) != 2 {
		t.Errorf("headless service ports: %+v", hs.Spec.Ports)
	}
	for _, p := range hs.Spec.Ports {
		if wantPorts[p.Name] != p.Port || p.TargetPort != intstr.FromInt32(p.Port) {
			t.Errorf("headless service port %+v", p)
		}
	}
	wantSel := map[string]string{"app": "etcd", "etcd_cluster": "example"}
	if !reflect.DeepEqual(hs.Spec.Selector, wantSel) || !reflect.DeepEqual(hs.Labels, wantSel) {
		t.Errorf("headless service selector %v labels %v", hs.Spec.Selector, hs.Labels)
	}
	// Client Service.
	cs := got.services["example-client"]
	if cs.Spec.ClusterIP == corev1.ClusterIPNone || cs.Spec.PublishNotReadyAddresses {
		t.Errorf("client service must be a normal Service routing to ready pods: %+v", cs.Spec)
	}
	if len(cs.Spec.Ports) != 1 || cs.Spec.Ports[0].Port != 2379 || cs.Spec.Ports[0].Name != "client" {
		t.Errorf("client service ports %+v", cs.Spec.Ports)
	}
	if !reflect.DeepEqual(cs.Spec.Selector, wantSel) {
		t.Errorf("client service selector %v", cs.Spec.Selector)
	}
	// PDB: every member of 3 (render.BudgetMinAvailable).
	if got.pdb.Name != "example" || got.pdb.Spec.MinAvailable == nil || *got.pdb.Spec.MinAvailable != intstr.FromInt32(3) || got.pdb.Spec.MaxUnavailable != nil {
		t.Errorf("pdb: %+v", got.pdb.Spec)
	}
	if got.pdb.Spec.UnhealthyPodEvictionPolicy == nil || *got.pdb.Spec.UnhealthyPodEvictionPolicy != policyv1.IfHealthyBudget {
		t.Errorf("pdb unhealthyPodEvictionPolicy: %v", got.pdb.Spec.UnhealthyPodEvictionPolicy)
	}
	if !reflect.DeepEqual(got.pdb.Spec.Selector.MatchLabels, wantSel) {
		t.Errorf("pdb selector %v", got.pdb.Spec.Selector)
	}

	for i, m := range members {
		p := got.pods[m.Name]
		if !reflect.DeepEqual(p.Labels, MemberLabels("example", m.Name)) {
			t.Errorf("%s labels %v", m.Name, p.Labels)
		}
		if !ClusterSelector("example").Matches(labels.Set(p.Labels)) {
			t.Errorf("%s not selected by ClusterSelector", m.Name)
		}
		wantAnn := map[string]string{AnnotationVersion: "3.6.16"}
		if i == 0 {
			wantAnn[AnnotationMemberID] = "8e9e05c52164694d"
		}
		if !reflect.DeepEqual(p.Annotations, wantAnn) {
			t.Errorf("%s annotations %v, want %v", m.Name, p.Annotations, wantAnn)
		}
		if p.Spec.Hostname != m.Name || p.Spec.Subdomain != "example" {
			t.Errorf("%s hostname %q subdomain %q", m.Name, p.Spec.Hostname, p.Spec.Subdomain)
		}
		if p.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Errorf("%s restartPolicy %q", m.Name, p.Spec.RestartPolicy)
		}
		if len(p.Spec.InitContainers) != 0 {
			t.Errorf("%s has init containers: %+v", m.Name, p.Spec.InitContainers)
		}
		if p.Spec.EnableServiceLinks == nil || *p.Spec.EnableServiceLinks {
			t.Errorf("%s: service links must be off (etcd reads ETCD_* variables)", m.Name)
		}
		ctr := etcdContainer(t, p)
		if ctr.Image != "quay.io/coreos/etcd:v3.6.16" || ctr.Image != Image(c.Spec, m.Version) {
			t.Errorf("%s image %q", m.Name, ctr.Image)
		}
		if !reflect.DeepEqual(ctr.Command, []string{"/usr/local/bin/etcd"}) {
			t.Errorf("%s command %v", m.Name, ctr.Command)
		}
		host := m.Name + ".example.default.svc"
		wantArgs := []string{
			"--name=" + m.Name,
			"--data-dir=/var/etcd/data",
			"--listen-peer-urls=http://0.0.0.0:2380",
			"--listen-client-urls=http://0.0.0.0:2379",
			"--listen-metrics-urls=http://0.0.0.0:2381",
			"--initial-advertise-peer-urls=http://" + host + ":2380",
			"--advertise-client-urls=http://" + host + ":2379",
			"--initial-cluster=example-0000=http://example-0000.example.default.svc:2380,example-0001=http://example-0001.example.default.svc:2380,example-0002=http://example-0002.example.default.svc:2380",
			"--initial-cluster-state=new",
			"--initial-cluster-token=example-0b1e5c7a-uid",
		}
		if !reflect.DeepEqual(ctr.Args, wantArgs) {
			t.Errorf("%s args:\n got %q\nwant %q", m.Name, ctr.Args, wantArgs)
		}
		if v, _ := flag(t, ctr.Args, "initial-advertise-peer-urls"); v != PeerURL(c, m.Name, "") {
			t.Errorf("advertised peer URL %q != PeerURL %q", v, PeerURL(c, m.Name, ""))
		}
		if v, _ := flag(t, ctr.Args, "advertise-client-urls"); v != ClientURL(c, m.Name, "") {
			t.Errorf("advertised client URL %q != ClientURL %q", v, ClientURL(c, m.Name, ""))
		}
		wantEnv := []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		}
		if !equality.Semantic.DeepEqual(ctr.Env, wantEnv) {
			t.Errorf("%s env %+v", m.Name, ctr.Env)
		}
		checkProbes(t, p, "/readyz", "/livez")
		if p.Spec.Containers[0].StartupProbe.FailureThreshold*p.Spec.Containers[0].StartupProbe.PeriodSeconds < 300 {
			t.Errorf("%s startup budget below the default 300 s: %+v", m.Name, p.Spec.Containers[0].StartupProbe)
		}
		if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != DataVolumeName || p.Spec.Volumes[0].EmptyDir == nil {
			t.Errorf("%s volumes %+v, want only an emptyDir %s", m.Name, p.Spec.Volumes, DataVolumeName)
		}
		if len(ctr.VolumeMounts) != 1 || ctr.VolumeMounts[0].Name != DataVolumeName || ctr.VolumeMounts[0].MountPath != DataMountPath {
			t.Errorf("%s mounts %+v", m.Name, ctr.VolumeMounts)
		}
		if p.Spec.Affinity != nil || p.Spec.NodeSelector != nil || p.Spec.Tolerations != nil {
			t.Errorf("%s: empty PodPolicy must add no scheduling settings: %+v", m.Name, p.Spec)
		}
		// Only the "restricted" defaults, nothing else.
		if want, _ := PodSecurityContext(nil); !equality.Semantic.DeepEqual(p.Spec.SecurityContext, want) {
			t.Errorf("%s: pod securityContext %+v, want the restricted defaults %+v", m.Name, p.Spec.SecurityContext, want)
		}
	}
}

// checkProbes asserts plain-HTTP probes on the metrics port with the given paths; an
// empty livePath means no liveness and no startup probe.
func checkProbes(t *testing.T, p *corev1.Pod, readyPath, livePath string) {
	t.Helper()
	ctr := p.Spec.Containers[0]
	check := func(what string, pr *corev1.Probe, path string) {
		t.Helper()
		if pr == nil || pr.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", p.Name, what)
			return
		}
		g := pr.HTTPGet
		if g.Path != path || g.Port != intstr.FromInt32(MetricsPort) || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) {
			t.Errorf("%s %s probe %+v, want HTTP %s on %d", p.Name, what, g, path, MetricsPort)
		}
		// No host: the kubelet dials the pod IP, which the metrics listener serves.
		if g.Host != "" {
			t.Errorf("%s %s probe names host %q; the kubelet must dial the pod IP", p.Name, what, g.Host)
		}
		if pr.PeriodSeconds <= 0 || pr.TimeoutSeconds <= 0 || pr.FailureThreshold <= 0 {
			t.Errorf("%s %s probe thresholds %+v", p.Name, what, pr)
		}
	}
	check("readiness", ctr.ReadinessProbe, readyPath)
	if livePath == "" {
		if ctr.LivenessProbe != nil || ctr.StartupProbe != nil {
			t.Errorf("%s: liveness/startup probes rendered for a version without a local health check", p.Name)
		}
		return
	}
	check("liveness", ctr.LivenessProbe, livePath)
	check("startup", ctr.StartupProbe, livePath)
	if lp := ctr.LivenessProbe; lp != nil && int(lp.FailureThreshold)*int(lp.PeriodSeconds) < 60 {
		t.Errorf("%s: liveness restarts etcd after %d s; too eager", p.Name, lp.FailureThreshold*lp.PeriodSeconds)
	}
}

func TestProbesFollowVersion(t *testing.T) {
	for _, tc := range []struct {
		version, ready, live string
	}{
		{"3.4.27", "/health", ""},
		{"3.5.17", "/health", "/health?serializable=true&exclude=NOSPACE"},
		{"v3.5.0", "/health", "/health?serializable=true&exclude=NOSPACE"},
		{"3.6.0-rc.0", "/readyz", "/livez"},
		{"3.6.16", "/readyz", "/livez"},
		{"3.7.3", "/readyz", "/livez"},
		{"v3.7.3", "/readyz", "/livez"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			c := coreosSample(tc.version)
			got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, "")})
			p := got.pods["example-0000"]
			checkProbes(t, p, tc.ready, tc.live)
			want := "quay.io/coreos/etcd:v" + strings.TrimPrefix(tc.version, "v")
			if img := etcdContainer(t, p).Image; img != want {
				t.Errorf("image %q, want %q", img, want)
			}
		})
	}
}

func TestPodPolicyFields(t *testing.T) {
	quota := corev1.EnvVar{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "4294967296"}
	fromSecret := corev1.EnvVar{Name: "ETCD_AUTH_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tok"}, Key: "t"}}}
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	tolerations := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd", Effect: corev1.TaintEffectNoSchedule}}
	uid, fsGroup := int64(1000), int64(2000)
	nonRoot := true
	sc := &corev1.PodSecurityContext{RunAsUser: &uid, FSGroup: &fsGroup, RunAsNonRoot: &nonRoot}
	nodeAff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}},
	}}}

	for _, tc := range []struct {
		field  string
		policy v1beta2.PodPolicy
		check  func(t *testing.T, c *v1beta2.EtcdCluster, got rendered, p *corev1.Pod)
	}{
		{"labels", v1beta2.PodPolicy{Labels: map[string]string{"team": "storage", "tier": "1"}}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			if p.Labels["team"] != "storage" || p.Labels["tier"] != "1" || p.Labels[LabelApp] != AppName {
				t.Errorf("labels %v", p.Labels)
			}
		}},
		{"annotations", v1beta2.PodPolicy{Annotations: map[string]string{"prometheus.io/scrape": "true", "n": "42"}}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			if p.Annotations["prometheus.io/scrape"] != "true" || p.Annotations["n"] != "42" || p.Annotations[AnnotationVersion] != "3.6.16" {
				t.Errorf("annotations %v", p.Annotations)
			}
		}},
		{"nodeSelector", v1beta2.PodPolicy{NodeSelector: map[string]string{"disktype": "ssd"}}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			if !reflect.DeepEqual(p.Spec.NodeSelector, map[string]string{"disktype": "ssd"}) {
				t.Errorf("nodeSelector %v", p.Spec.NodeSelector)
			}
		}},
		{"affinity", v1beta2.PodPolicy{Affinity: nodeAff}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			if !equality.Semantic.DeepEqual(p.Spec.Affinity, nodeAff) {
				t.Errorf("affinity %+v", p.Spec.Affinity)
			}
		}},
		{"antiAffinity", v1beta2.PodPolicy{AntiAffinity: true}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			want := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{antiAffinityTerm("example")}}}
			if !equality.Semantic.DeepEqual(p.Spec.Affinity, want) {
				t.Errorf("affinity %+v", p.Spec.Affinity)
			}
		}},
		{"resources", v1beta2.PodPolicy{Resources: resources}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			if !equality.Semantic.DeepEqual(p.Spec.Containers[0].Resources, resources) {
				t.Errorf("resources %+v", p.Spec.Containers[0].Resources)
			}
		}},
		{"tolerations", v1beta2.PodPolicy{Tolerations: tolerations}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			if !equality.Semantic.DeepEqual(p.Spec.Tolerations, tolerations) {
				t.Errorf("tolerations %+v", p.Spec.Tolerations)
			}
		}},
		{"etcdEnv", v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{quota, fromSecret}}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			env := p.Spec.Containers[0].Env
			if len(env) != 3 || env[0].Name != "POD_NAME" || !equality.Semantic.DeepEqual(env[1:], []corev1.EnvVar{quota, fromSecret}) {
				t.Errorf("env %+v", env)
			}
		}},
		{"persistentVolumeClaimSpec", v1beta2.PodPolicy{PersistentVolumeClaimSpec: pvcSpec()}, func(t *testing.T, _ *v1beta2.EtcdCluster, got rendered, p *corev1.Pod) {
			if len(got.pvcs) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim == nil {
				t.Errorf("pvcs %v volumes %+v", got.pvcs, p.Spec.Volumes)
			}
		}},
		{"securityContext", v1beta2.PodPolicy{SecurityContext: sc}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			// The user's fields as set, the rest the restricted defaults.
			want, _ := PodSecurityContext(sc)
			if !equality.Semantic.DeepEqual(p.Spec.SecurityContext, want) || *want.RunAsUser != *sc.RunAsUser || *want.FSGroup != *sc.FSGroup {
				t.Errorf("securityContext %+v, want %+v", p.Spec.SecurityContext, want)
			}
		}},
		{"busyboxImage (ignored: no init container)", v1beta2.PodPolicy{BusyboxImage: "busybox:1.28.0-glibc"}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			if len(p.Spec.InitContainers) != 0 || len(p.Spec.Containers) != 1 {
				t.Errorf("containers %+v init %+v", p.Spec.Containers, p.Spec.InitContainers)
			}
		}},
		{"DNSTimeoutInSecond extends the startup budget", v1beta2.PodPolicy{DNSTimeoutInSecond: 1801}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			sp := p.Spec.Containers[0].StartupProbe
			if budget := sp.PeriodSeconds * sp.FailureThreshold; budget < 1801 || budget >= 1801+sp.PeriodSeconds {
				t.Errorf("startup budget %d s, want the first multiple of %d s >= 1801", budget, sp.PeriodSeconds)
			}
		}},
		{"DNSTimeoutInSecond below the default keeps the default", v1beta2.PodPolicy{DNSTimeoutInSecond: 10}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			sp := p.Spec.Containers[0].StartupProbe
			if budget := sp.PeriodSeconds * sp.FailureThreshold; budget != 300 {
				t.Errorf("startup budget %d s, want 300", budget)
			}
		}},
		// A value stored before the CRD had a maximum saturates at a day instead of
		// overflowing the probe's int32 threshold.
		{"DNSTimeoutInSecond saturates at a day", v1beta2.PodPolicy{DNSTimeoutInSecond: math.MaxInt64}, func(t *testing.T, _ *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			sp := p.Spec.Containers[0].StartupProbe
			if budget := int64(sp.PeriodSeconds) * int64(sp.FailureThreshold); budget < MaxDNSTimeoutSeconds || budget >= MaxDNSTimeoutSeconds+int64(sp.PeriodSeconds) {
				t.Errorf("startup budget %d s, want the first multiple of %d s >= %d", budget, sp.PeriodSeconds, MaxDNSTimeoutSeconds)
			}
		}},
		{"ClusterDomain", v1beta2.PodPolicy{ClusterDomain: "cluster.local"}, func(t *testing.T, c *v1beta2.EtcdCluster, _ rendered, p *corev1.Pod) {
			args := p.Spec.Containers[0].Args
			if v, _ := flag(t, args, "initial-advertise-peer-urls"); v != "http://example-0000.example.default.svc.cluster.local:2380" || v != PeerURL(c, p.Name, "ignored.example") {
				t.Errorf("peer URL %q", v)
			}
			if v, _ := flag(t, args, "advertise-client-urls"); v != "http://example-0000.example.default.svc.cluster.local:2379" {
				t.Errorf("client URL %q", v)
			}
		}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := coreosSample("3.6.16")
			policy := tc.policy
			c.Spec.Pod = &policy
			// Input.ClusterDomain is the operator default; spec.pod.ClusterDomain wins.
			got := mustRender(t, Input{Cluster: c, ClusterDomain: "ignored.example", Members: bootstrap(c, 1, "ignored.example")})
			tc.check(t, c, got, got.pods["example-0000"])
		})
	}

	// Every PodPolicy field must have a row above: a field added to the API without a
	// chart value fails here.
	covered := map[string]bool{}
	for _, f := range []string{"labels", "annotations", "nodeSelector", "affinity", "antiAffinity", "resources", "tolerations", "etcdEnv", "persistentVolumeClaimSpec", "securityContext", "busyboxImage", "DNSTimeoutInSecond", "ClusterDomain",
		"hostAliases", "volumes", "volumeMounts"} { // refused: TestKnobsRefused
		covered[f] = true
	}
	typ := reflect.TypeOf(v1beta2.PodPolicy{})
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !covered[name] {
			t.Errorf("PodPolicy field %q has no test row", name)
		}
	}
}

func antiAffinityTerm(cluster string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelCluster: cluster}},
		TopologyKey:   "kubernetes.io/hostname",
	}
}

func pvcSpec() *corev1.PersistentVolumeClaimSpec {
	class := "fast"
	return &corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: &class,
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Gi")}},
	}
}

func TestAntiAffinityMergesWithUserAffinity(t *testing.T) {
	userTerm := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "noisy"}},
		TopologyKey:   "topology.kubernetes.io/zone",
	}
	preferred := []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: antiAffinityTerm("other")}}
	nodeAff := &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
	}}}
	c := coreosSample("3.6.16")
	c.Spec.Pod = &v1beta2.PodPolicy{
		AntiAffinity: true,
		Affinity: &corev1.Affinity{
			NodeAffinity: nodeAff,
			PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{userTerm},
				PreferredDuringSchedulingIgnoredDuringExecution: preferred,
			},
		},
	}
	before := c.DeepCopy()
	got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 3, "")})
	want := &corev1.Affinity{
		NodeAffinity: nodeAff,
		PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{userTerm, antiAffinityTerm("example")},
			PreferredDuringSchedulingIgnoredDuringExecution: preferred,
		},
	}
	// Every pod gets exactly one added term: the merge must not accumulate across the
	// pods of one rendering (the template loop shares the values).
	for name, p := range got.pods {
		if !equality.Semantic.DeepEqual(p.Spec.Affinity, want) {
			t.Errorf("%s affinity:\n got %+v\nwant %+v", name, p.Spec.Affinity, want)
		}
	}
	if !equality.Semantic.DeepEqual(before, c) {
		t.Errorf("Render modified the EtcdCluster")
	}
	// Nor across renderings.
	again := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, "")})
	if a := again.pods["example-0000"].Spec.Affinity; !equality.Semantic.DeepEqual(a, want) {
		t.Errorf("second rendering affinity %+v", a)
	}
}

func TestPVCMode(t *testing.T) {
	c := coreosSample("3.6.16")
	c.Spec.Pod = &v1beta2.PodPolicy{PersistentVolumeClaimSpec: pvcSpec(), Labels: map[string]string{"team": "storage"}}
	members := bootstrap(c, 3, "")
	got := mustRender(t, Input{Cluster: c, Members: members})
	if len(got.pvcs) != 3 {
		t.Fatalf("%d PVCs, want 3", len(got.pvcs))
	}
	// PVCs come before their pods so the controller can create them in the returned order.
	idx := map[string]int{}
	for i, o := range got.all {
		idx[fmt.Sprintf("%T/%s", o, o.GetName())] = i
	}
	for _, m := range members {
		pvc := got.pvcs[m.Name]
		if pvc == nil {
			t.Fatalf("no PVC named %s", m.Name)
		}
		if pvc.Namespace != "default" {
			t.Errorf("pvc namespace %q", pvc.Namespace)
		}
		if !equality.Semantic.DeepEqual(pvc.Spec, *pvcSpec()) {
			t.Errorf("pvc spec %+v", pvc.Spec)
		}
		p := got.pods[m.Name]
		if !reflect.DeepEqual(pvc.Labels, p.Labels) || pvc.Labels[LabelNode] != m.Name || pvc.Labels["team"] != "storage" {
			t.Errorf("pvc labels %v, pod labels %v", pvc.Labels, p.Labels)
		}
		v := p.Spec.Volumes[0]
		if v.Name != DataVolumeName || v.EmptyDir != nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != m.Name {
			t.Errorf("%s data volume %+v", m.Name, v)
		}
		if idx["*v1.PersistentVolumeClaim/"+m.Name] > idx["*v1.Pod/"+m.Name] {
			t.Errorf("PVC %s after its pod", m.Name)
		}
	}
}

func tlsCluster(peer, server string) *v1beta2.EtcdCluster {
	c := coreosSample("3.6.16")
	c.Spec.TLS = &v1beta2.TLSPolicy{Static: &v1beta2.StaticTLS{Member: &v1beta2.MemberSecret{PeerSecret: peer, ServerSecret: server}}}
	if server != "" {
		c.Spec.TLS.Static.OperatorSecret = "etcd-client-tls"
	}
	return c
}

func TestTLSMode(t *testing.T) {
	peerFlags := map[string]string{
		"peer-cert-file":        "/etc/etcd/peer/peer.crt",
		"peer-key-file":         "/etc/etcd/peer/peer.key",
		"peer-trusted-ca-file":  "/etc/etcd/peer/peer-ca.crt",
		"peer-client-cert-auth": "true",
	}
	serverFlags := map[string]string{
		"cert-file":        "/etc/etcd/server/server.crt",
		"key-file":         "/etc/etcd/server/server.key",
		"trusted-ca-file":  "/etc/etcd/server/server-ca.crt",
		"client-cert-auth": "true",
	}
	for _, tc := range []struct {
		name, peer, server string
	}{
		{"peer and server", "etcd-peer-tls", "etcd-server-tls"},
		{"peer only", "etcd-peer-tls", ""},
		{"server only", "", "etcd-server-tls"},
		{"none", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tlsCluster(tc.peer, tc.server)
			if PeerTLS(c) != (tc.peer != "") || ClientTLS(c) != (tc.server != "") {
				t.Fatalf("PeerTLS/ClientTLS disagree with the spec")
			}
			members := bootstrap(c, 3, "cluster.local")
			got := mustRender(t, Input{Cluster: c, ClusterDomain: "cluster.local", Members: members})
			p := got.pods[members[1].Name]
			ctr := etcdContainer(t, p)
			peerScheme, clientScheme := "http", "http"
			if tc.peer != "" {
				peerScheme = "https"
			}
			if tc.server != "" {
				clientScheme = "https"
			}
			host := members[1].Name + ".example.default.svc.cluster.local"
			for f, want := range map[string]string{
				"listen-peer-urls":            peerScheme + "://0.0.0.0:2380",
				"listen-client-urls":          clientScheme + "://0.0.0.0:2379",
				"listen-metrics-urls":         "http://0.0.0.0:2381",
				"initial-advertise-peer-urls": peerScheme + "://" + host + ":2380",
				"advertise-client-urls":       clientScheme + "://" + host + ":2379",
			} {
				if v, _ := flag(t, ctr.Args, f); v != want {
					t.Errorf("--%s=%q, want %q", f, v, want)
				}
			}
			if v, _ := flag(t, ctr.Args, "initial-advertise-peer-urls"); v != PeerURL(c, p.Name, "cluster.local") {
				t.Errorf("advertised peer URL %q != PeerURL %q", v, PeerURL(c, p.Name, "cluster.local"))
			}
			if v, _ := flag(t, ctr.Args, "advertise-client-urls"); v != ClientURL(c, p.Name, "cluster.local") {
				t.Errorf("advertised client URL %q != ClientURL %q", v, ClientURL(c, p.Name, "cluster.local"))
			}
			if v, _ := flag(t, ctr.Args, "initial-cluster"); !strings.Contains(v, peerScheme+"://"+host+":2380") {
				t.Errorf("initial cluster %q", v)
			}
			for set, flags := range map[string]map[string]string{tc.peer: peerFlags, tc.server: serverFlags} {
				for f, want := range flags {
					v, ok := flag(t, ctr.Args, f)
					if set != "" && (!ok || v != want) {
						t.Errorf("--%s=%q (present %v), want %q", f, v, ok, want)
					}
					if set == "" && ok {
						t.Errorf("--%s set without its Secret", f)
					}
				}
			}
			mounts := map[string]corev1.VolumeMount{}
			for _, m := range ctr.VolumeMounts {
				mounts[m.MountPath] = m
			}
			secrets := map[string]string{}
			for _, v := range p.Spec.Volumes {
				if v.Secret != nil {
					secrets[v.Name] = v.Secret.SecretName
				}
			}
			for dir, secret := range map[string]string{PeerTLSDir: tc.peer, ServerTLSDir: tc.server} {
				m, ok := mounts[dir]
				if secret == "" {
					if ok {
						t.Errorf("%s mounted without a Secret", dir)
					}
					continue
				}
				if !ok || !m.ReadOnly || secrets[m.Name] != secret {
					t.Errorf("%s: mount %+v (present %v), secret volumes %v, want read-only Secret %s", dir, m, ok, secrets, secret)
				}
			}
			// Probes stay plain HTTP on the metrics listener: HTTPS probes could not
			// present the client certificate --client-cert-auth demands.
			checkProbes(t, p, "/readyz", "/livez")
		})
	}
}

func TestUpgradeInProgressUsesEachMembersVersion(t *testing.T) {
	c := coreosSample("3.7.3")
	c.Spec.Repository = "registry.example/etcd"
	members := bootstrap(c, 3, "")
	members[0].Version = "3.6.16" // not yet upgraded
	members[1].Version = "v3.7.3" // upgraded, with a "v"
	members[2].Version = ""       // defaults to spec.version
	members[2].InitialClusterState = StateExisting
	got := mustRender(t, Input{Cluster: c, Members: members})
	for i, want := range []string{"3.6.16", "3.7.3", "3.7.3"} {
		p := got.pods[members[i].Name]
		if img := etcdContainer(t, p).Image; img != "registry.example/etcd:v"+want || img != Image(c.Spec, members[i].Version) {
			t.Errorf("%s image %q, want version %s", p.Name, img, want)
		}
		if p.Annotations[AnnotationVersion] != want {
			t.Errorf("%s %s=%q, want %q", p.Name, AnnotationVersion, p.Annotations[AnnotationVersion], want)
		}
	}
	if v, _ := flag(t, got.pods[members[2].Name].Spec.Containers[0].Args, "initial-cluster-state"); v != StateExisting {
		t.Errorf("initial-cluster-state %q", v)
	}
}

func TestReservedKeysCannotBeOverridden(t *testing.T) {
	c := coreosSample("3.6.16")
	c.Spec.Pod = &v1beta2.PodPolicy{
		Labels: map[string]string{
			"app": "not-etcd", "etcd_cluster": "other", "etcd_node": "someone-else", "etcd_custom": "x", "keep": "me",
		},
		Annotations: map[string]string{
			AnnotationVersion: "9.9.9", AnnotationMemberID: "ffff", "keep": "me",
		},
	}
	members := bootstrap(c, 1, "")
	members[0].ID = "abcd"
	got := mustRender(t, Input{Cluster: c, Members: members})
	p := got.pods[members[0].Name]
	wantLabels := MemberLabels("example", members[0].Name)
	wantLabels["keep"] = "me"
	if !reflect.DeepEqual(p.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", p.Labels, wantLabels)
	}
	wantAnn := map[string]string{AnnotationVersion: "3.6.16", AnnotationMemberID: "abcd", "keep": "me"}
	if !reflect.DeepEqual(p.Annotations, wantAnn) {
		t.Errorf("annotations %v, want %v", p.Annotations, wantAnn)
	}
	// Without a known ID the user's member-id annotation is still dropped.
	members[0].ID = ""
	got = mustRender(t, Input{Cluster: c, Members: members})
	if v, ok := got.pods[members[0].Name].Annotations[AnnotationMemberID]; ok {
		t.Errorf("user-supplied %s=%q survived", AnnotationMemberID, v)
	}
	for _, k := range []string{"app", "etcd_cluster", "etcd_node", "etcd_x"} {
		if !IsReservedLabel(k) {
			t.Errorf("IsReservedLabel(%q) = false", k)
		}
	}
	if IsReservedLabel("application") || IsReservedAnnotation("etcd.version.x") {
		t.Errorf("reserved-key helpers too broad")
	}
}

func TestPDBMinAvailable(t *testing.T) {
	for _, tc := range []struct {
		size, members, budget, want int
	}{
		{1, 1, 0, 1}, // see pdb.yaml: a single member is not evicted; the operator moves it
		{1, 0, 0, 1},
		{1, 2, 0, 2}, // moving a single member: neither may be evicted until the old one is removed
		{2, 2, 0, 2},
		{3, 3, 0, 3}, // every member: the operator moves members off cordoned nodes itself
		{3, 1, 0, 3}, // growing: the members that exist must not be evictable
		{3, 5, 0, 5}, // shrinking: five voters
		{5, 5, 0, 5},
		{3, 3, 2, 2}, // the operator's number wins (no node to leave to: a quorum)
	} {
		t.Run(fmt.Sprintf("size%d_members%d_budget%d", tc.size, tc.members, tc.budget), func(t *testing.T) {
			c := coreosSample("3.6.16")
			c.Spec.Size = tc.size
			got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, tc.members, ""), Budget: tc.budget})
			if got.pdb.Spec.MinAvailable == nil || got.pdb.Spec.MinAvailable.IntValue() != tc.want {
				t.Errorf("minAvailable %v, want %d", got.pdb.Spec.MinAvailable, tc.want)
			}
		})
	}
}

func TestBudgetMinAvailable(t *testing.T) {
	for _, tc := range []struct {
		n       int
		noNode  bool
		want    int
		because string
	}{
		{0, false, 0, "no members: nothing to protect"},
		{1, false, 1, "one member: never evicted"},
		{1, true, 1, "one member with nowhere to go: still never evicted (an outage)"},
		{2, true, 2, "two members: the quorum of two is two"},
		{3, false, 3, "three: every member, moved add-before-remove"},
		{3, true, 2, "three, nowhere to go: a quorum, so the drain is not blocked forever"},
		{4, true, 3, "four, nowhere to go: a quorum of four"},
		{5, false, 5, "five: every member"},
		{5, true, 3, "five, nowhere to go: a quorum of five"},
	} {
		if got := BudgetMinAvailable(tc.n, tc.noNode); got != tc.want {
			t.Errorf("BudgetMinAvailable(%d, %v) = %d, want %d: %s", tc.n, tc.noNode, got, tc.want, tc.because)
		}
	}
}

func TestNoMembersRendersServicesAndPDB(t *testing.T) {
	c := coreosSample("3.6.16")
	c.Spec.Pod = &v1beta2.PodPolicy{PersistentVolumeClaimSpec: pvcSpec()}
	got := mustRender(t, Input{Cluster: c})
	if len(got.all) != 3 || len(got.services) != 2 || got.pdb == nil {
		t.Errorf("objects %d: services %v pdb %v", len(got.all), got.services, got.pdb)
	}
}

func TestURLHelpers(t *testing.T) {
	c := coreosSample("3.6.16")
	for _, tc := range []struct {
		specDomain, defaultDomain, wantHost string
	}{
		{"", "", "m1.example.default.svc"},
		{"", "cluster.local", "m1.example.default.svc.cluster.local"},
		{"", ".cluster.local.", "m1.example.default.svc.cluster.local"},
		{"corp.internal", "cluster.local", "m1.example.default.svc.corp.internal"},
		{".corp.internal", "", "m1.example.default.svc.corp.internal"},
	} {
		c.Spec.Pod = &v1beta2.PodPolicy{ClusterDomain: tc.specDomain}
		if h := MemberHost(c, "m1", tc.defaultDomain); h != tc.wantHost {
			t.Errorf("MemberHost(spec %q, default %q) = %q, want %q", tc.specDomain, tc.defaultDomain, h, tc.wantHost)
		}
		// The chart builds the same name.
		got := mustRender(t, Input{Cluster: c, ClusterDomain: tc.defaultDomain, Members: []Member{{
			Name: "m1", InitialClusterState: StateNew, InitialCluster: InitialClusterEntry(c, "m1", tc.defaultDomain),
		}}})
		if v, _ := flag(t, got.pods["m1"].Spec.Containers[0].Args, "initial-advertise-peer-urls"); v != "http://"+tc.wantHost+":2380" {
			t.Errorf("chart peer URL %q, want host %q", v, tc.wantHost)
		}
	}
	c.Spec.Pod = nil
	if got := InitialCluster(c, []string{"a", "b"}, ""); got != "a=http://a.example.default.svc:2380,b=http://b.example.default.svc:2380" {
		t.Errorf("InitialCluster = %q", got)
	}
	if got := ServiceClientURL(tlsCluster("p", "s"), "cluster.local"); got != "https://example-client.default.svc.cluster.local:2379" {
		t.Errorf("ServiceClientURL = %q", got)
	}
	noUID := coreosSample("3.6.16")
	noUID.UID = ""
	if ClusterToken(noUID) != "example" || ClusterToken(coreosSample("")) != "example-0b1e5c7a-uid" {
		t.Errorf("ClusterToken: %q %q", ClusterToken(noUID), ClusterToken(coreosSample("")))
	}
}

func TestImage(t *testing.T) {
	for _, tc := range []struct {
		repo, specVersion, version, want string
	}{
		{"", "", "", "quay.io/coreos/etcd:v" + v1beta2.DefaultVersion},
		{"", "3.6.16", "", "quay.io/coreos/etcd:v3.6.16"},
		{"", "v3.6.16", "", "quay.io/coreos/etcd:v3.6.16"},
		{"", "3.6.16", "v3.7.3", "quay.io/coreos/etcd:v3.7.3"},
		{"gcr.io/etcd-development/etcd", "3.7.3", "3.7.3", "gcr.io/etcd-development/etcd:v3.7.3"},
	} {
		if got := Image(v1beta2.EtcdClusterSpec{Repository: tc.repo, Version: tc.specVersion}, tc.version); got != tc.want {
			t.Errorf("Image(%q, %q, %q) = %q, want %q", tc.repo, tc.specVersion, tc.version, got, tc.want)
		}
	}
}

func TestInvalidInput(t *testing.T) {
	valid := func() Input {
		c := coreosSample("3.6.16")
		return Input{Cluster: c, Members: bootstrap(c, 3, "")}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Input)
		want   string
	}{
		{"no cluster", func(in *Input) { in.Cluster = nil }, "no cluster"},
		{"no namespace", func(in *Input) { in.Cluster.Namespace = "" }, "no namespace"},
		{"bad cluster name", func(in *Input) { in.Cluster.Name = "Example_1" }, "cluster name"},
		{"cluster name too long for the client Service", func(in *Input) { in.Cluster.Name = strings.Repeat("a", 60) }, "client service name"},
		{"bad spec version", func(in *Input) { in.Cluster.Spec.Version = "latest" }, "spec.version"},
		{"bad member name", func(in *Input) { in.Members[0].Name = "Bad.Name" }, "name"},
		{"duplicate member", func(in *Input) { in.Members[1] = in.Members[0] }, "listed twice"},
		{"bad state", func(in *Input) { in.Members[0].InitialClusterState = "joining" }, "initial cluster state"},
		{"member missing from its initial cluster", func(in *Input) { in.Members[0].InitialCluster = InitialClusterEntry(in.Cluster, "someone", "") }, "own entry"},
		{"initial cluster with the wrong domain", func(in *Input) { in.ClusterDomain = "cluster.local" }, "own entry"},
		{"bad member version", func(in *Input) { in.Members[0].Version = "3.6" }, "version"},
		{"bad ID", func(in *Input) { in.Members[0].ID = "xyz" }, "hex"},
		{"etcdEnv repeats a flag", func(in *Input) {
			in.Cluster.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_INITIAL_CLUSTER_TOKEN", Value: "x"}}}
		}, "ETCD_INITIAL_CLUSTER_TOKEN is set by the operator"},
		{"etcdEnv overrides POD_IP", func(in *Input) {
			in.Cluster.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "POD_IP", Value: "1.2.3.4"}}}
		}, "POD_IP"},
		{"etcdEnv repeats a TLS flag", func(in *Input) {
			in.Cluster.Spec.TLS = tlsCluster("p", "s").Spec.TLS
			in.Cluster.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_CLIENT_CERT_AUTH", Value: "false"}}}
		}, "ETCD_CLIENT_CERT_AUTH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := valid()
			tc.mutate(&in)
			_, err := sharedRenderer.Render(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := sharedRenderer.Render(valid()); err != nil {
		t.Fatalf("the valid input fails: %v", err)
	}
}

func TestClusterSelectorSeparatesClusters(t *testing.T) {
	a, b := coreosSample("3.6.16"), coreosSample("3.6.16")
	b.Name = "example-two"
	pa := mustRender(t, Input{Cluster: a, Members: bootstrap(a, 1, "")}).pods["example-0000"]
	pb := mustRender(t, Input{Cluster: b, Members: bootstrap(b, 1, "")}).pods["example-two-0000"]
	if !ClusterSelector("example").Matches(labels.Set(pa.Labels)) || ClusterSelector("example").Matches(labels.Set(pb.Labels)) {
		t.Errorf("selector for example: matches own %v, other %v", ClusterSelector("example").Matches(labels.Set(pa.Labels)), ClusterSelector("example").Matches(labels.Set(pb.Labels)))
	}
}

func TestConcurrentRenders(t *testing.T) {
	c := coreosSample("3.6.16")
	c.Spec.Pod = &v1beta2.PodPolicy{AntiAffinity: true, Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{antiAffinityTerm("x")},
	}}}
	in := Input{Cluster: c, Members: bootstrap(c, 3, "")}
	want := mustRender(t, in).all
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := sharedRenderer.Render(in)
			if err != nil {
				errs <- err.Error()
				return
			}
			if !equality.Semantic.DeepEqual(got, want) {
				errs <- "concurrent rendering differs"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// ReservedEnv must name exactly the variables and flags the chart sets, or a user
// variable could still collide with one (etcd then exits) or be refused for no reason.
func TestReservedEnvMatchesRenderedFlags(t *testing.T) {
	for _, c := range []*v1beta2.EtcdCluster{coreosSample("3.6.16"), tlsCluster("p", "s"), tlsCluster("p", "")} {
		got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, "")})
		want := map[string]bool{}
		for _, e := range got.pods["example-0000"].Spec.Containers[0].Env {
			want[e.Name] = true
		}
		for _, a := range got.pods["example-0000"].Spec.Containers[0].Args {
			f, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			want["ETCD_"+strings.ToUpper(strings.ReplaceAll(f, "-", "_"))] = true
		}
		have := map[string]bool{}
		for _, n := range ReservedEnv(c) {
			have[n] = true
		}
		if !reflect.DeepEqual(have, want) {
			t.Errorf("ReservedEnv %v, rendered flags give %v", have, want)
		}
		// A variable etcd knows but the chart does not set is allowed.
		c.Spec.Pod = &v1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"}}}
		if _, err := sharedRenderer.Render(Input{Cluster: c, Members: bootstrap(c, 1, "")}); err != nil {
			t.Errorf("ETCD_QUOTA_BACKEND_BYTES refused: %v", err)
		}
	}
}

// A crash-looping etcd's fatal error must reach the cluster's status: etcd writes no
// termination-message file, so the log tail has to stand in for it.
func TestEtcdTerminationMessageFallsBackToLogs(t *testing.T) {
	c := coreosSample("3.6.16")
	got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, "")})
	if p := etcdContainer(t, got.pods["example-0000"]).TerminationMessagePolicy; p != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("terminationMessagePolicy %q, want %q", p, corev1.TerminationMessageFallbackToLogsOnError)
	}
}

// With cert-manager issuing (an issuer other clusters may share) a member accepts only
// peers whose certificate names this cluster's members; with other TLS modes, any the
// CA signed. The name matches the wildcard cert-manager's peer certificates carry.
func TestPeerAllowedHostname(t *testing.T) {
	c := tlsCluster("db-cm-tls-1-peer", "db-cm-tls-1-server")
	members := bootstrap(c, 3, "cluster.local")
	p := mustRender(t, Input{Cluster: c, ClusterDomain: "cluster.local", Members: members}).pods[members[0].Name]
	if v, ok := flag(t, etcdContainer(t, p).Args, "peer-cert-allowed-hostname"); ok {
		t.Fatalf("static TLS: --peer-cert-allowed-hostname=%q, want none", v)
	}
	c.Spec.TLS.CertManager = &v1beta2.CertManagerTLS{IssuerRef: v1beta2.CertManagerIssuerRef{Name: "shared", Kind: "ClusterIssuer"}}
	p = mustRender(t, Input{Cluster: c, ClusterDomain: "cluster.local", Members: members}).pods[members[0].Name]
	v, ok := flag(t, etcdContainer(t, p).Args, "peer-cert-allowed-hostname")
	if !ok || v != PeerAllowedHostname(c) {
		t.Fatalf("cert-manager issuing: --peer-cert-allowed-hostname=%q (present %v), want %q", v, ok, PeerAllowedHostname(c))
	}
	dns, _ := certissue.SANs(certissue.KindPeer, certissue.Names{Cluster: c.Name, Namespace: c.Namespace, Domain: "cluster.local"})
	own := &x509.Certificate{DNSNames: dns}
	if err := own.VerifyHostname(v); err != nil {
		t.Errorf("the cluster's own peer certificate does not name %q: %v", v, err)
	}
	otherDNS, _ := certissue.SANs(certissue.KindPeer, certissue.Names{Cluster: c.Name, Namespace: "other", Domain: "cluster.local"})
	if err := (&x509.Certificate{DNSNames: otherDNS}).VerifyHostname(v); err == nil {
		t.Errorf("a same-named cluster's peer certificate in another namespace names %q", v)
	}
	if !slices.Contains(ReservedEnv(c), "ETCD_PEER_CERT_ALLOWED_HOSTNAME") {
		t.Error("ETCD_PEER_CERT_ALLOWED_HOSTNAME is not reserved")
	}
}
