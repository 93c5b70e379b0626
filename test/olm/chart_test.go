package olm

import (
	"bytes"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
)

const chartDir = root + "/helm-charts/etcd-operator"

// release is what `helm install <name> helm-charts/etcd-operator -n <namespace>` renders.
type release struct {
	chart *chart.Chart
	objs  []*unstructured.Unstructured // templates, in a stable order
	crds  []*unstructured.Unstructured // crds/, which Helm creates before the templates
}

// renderChart renders the install chart the way `helm install --dry-run` does for a
// first install, with Helm's own engine: chart defaults coalesced with vals, strict
// about undefined values.
func renderChart(t *testing.T, vals map[string]any, name, namespace string) (*release, error) {
	t.Helper()
	return renderChartSchema(t, vals, name, namespace, true)
}

// renderChartSchema is renderChart, without the values schema when withSchema is false
// (as `helm install --skip-schema-validation` renders): what the templates refuse alone.
func renderChartSchema(t *testing.T, vals map[string]any, name, namespace string, withSchema bool) (*release, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	if !withSchema {
		ch.Schema = nil
	}
	// Helm's default capabilities claim Kubernetes 1.20; render as for the version the
	// operator is built and tested against, as `helm install` against such a cluster would.
	kv, err := chartutil.ParseKubeVersion(k8sVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	if !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		t.Fatalf("chart kubeVersion %q excludes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: name, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, err
	}
	out, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	r := &release{chart: ch}
	var names []string
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		r.objs = append(r.objs, readObjects(t, []byte(out[n]))...)
	}
	for _, crd := range ch.CRDObjects() {
		r.crds = append(r.crds, readObjects(t, crd.File.Data)...)
	}
	return r, nil
}

func mustRender(t *testing.T, vals map[string]any) *release {
	t.Helper()
	r, err := renderChart(t, vals, "etcd-operator", "etcd-operator-system")
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

// one returns the only rendered object of a kind, converted to a typed object.
func one[T any](t *testing.T, r *release, kind string) *T {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s, rendered %d", kind, len(found))
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(found[0].Object, out, true); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	return out
}

// TestChartLints runs Helm's linter (Chart.yaml, values, templates rendered and parsed)
// with the default values and with every documented value set. Anything above an
// informational message fails.
func TestChartLints(t *testing.T) {
	for name, vals := range map[string]map[string]any{"defaults": nil, "all values": allValues()} {
		t.Run(name, func(t *testing.T) {
			l := lint.All(chartDir, vals, "etcd-operator-system", false)
			for _, m := range l.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint: %s", m.Error())
				} else {
					t.Logf("helm lint: %s", m.Error())
				}
			}
		})
	}
}

func allValues() map[string]any {
	return map[string]any{
		"image":                        map[string]any{"repository": "mirror/etcd-operator", "tag": "dev", "pullPolicy": "Always"},
		"imagePullSecrets":             []any{map[string]any{"name": "pull"}},
		"watchNamespace":               "team-a",
		"clusterDomain":                "example.local",
		"allowExternalBackupEndpoints": true,
		"scopeAnnotation":              "clusterwide",
		"shard": map[string]any{"key": "etcd.database.coreos.com/shard", "value": "eu-2", "default": true,
			"guard": map[string]any{"enabled": true, "adminGroups": []any{"system:masters", "fleet-admins"}}},
		"allowAmbientS3Credentials":  true,
		"clientServiceTypes":         []any{"NodePort", "LoadBalancer"},
		"allowClientServiceMetadata": true,
		"allowedPriorityClasses":     []any{"etcd-high", "system-cluster-critical"},
		"allowedClusterIssuers":      []any{"shared-ca"},
		"maxBackupBytes":             1 << 30,
		"backupHashTimeout":          "15m",
		"goMemLimit":                 "200MiB",
		"kubeAPIQPS":                 80.5,
		"kubeAPIBurst":               160,
		"clusterWorkers":             16,
		"extraArgs":                  []any{"--zap-log-level=debug"},
		"replicaCount":               2,
		"resources":                  map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}},
		"nodeSelector":               map[string]any{"node-role.kubernetes.io/infra": ""},
		"tolerations": []any{map[string]any{
			"key": "node-role.kubernetes.io/infra", "operator": "Exists", "effect": "NoSchedule",
		}},
		"affinity":          map[string]any{},
		"priorityClassName": "system-cluster-critical",
		"podAnnotations":    map[string]any{"example.com/note": "x"},
		"podLabels":         map[string]any{"team": "storage"},
	}
}

// TestChartDefaultInstall renders the chart with its defaults and checks every object:
// the CRDs are config/crd's, the ClusterRole is config/rbac/role.yaml, the
// Deployment runs the manager like config/manager does, and the bindings tie them to
// the release's ServiceAccount.
func TestChartDefaultInstall(t *testing.T) {
	r := mustRender(t, nil)
	const ns = "etcd-operator-system"

	kinds := map[string]int{}
	for _, o := range r.objs {
		kinds[o.GetKind()]++
		clusterScoped := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true,
			"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
		if !clusterScoped[o.GetKind()] && o.GetNamespace() != ns {
			t.Errorf("%s %s in namespace %q, want %q", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
		}
		if o.GetLabels()["app.kubernetes.io/instance"] != "etcd-operator" {
			t.Errorf("%s %s lacks the release labels: %v", o.GetKind(), o.GetName(), o.GetLabels())
		}
	}
	// Two Roles and bindings: leader election, and the webhook certificate Secret; one
	// Service: the conversion webhook's; two admission policies: size warnings and the
	// v1beta2 auth annotations.
	want := map[string]int{"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "Role": 2, "RoleBinding": 2, "Deployment": 1, "Service": 1,
		"ValidatingAdmissionPolicy": 2, "ValidatingAdmissionPolicyBinding": 2, "NetworkPolicy": 1}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("rendered kinds %v, want %v", kinds, want)
	}

	// CRDs: exactly config/crd's kustomize output (config/crd/bases plus the conversion
	// patches).
	installed := installedCRDs(t)
	if len(r.crds) != len(installed) {
		t.Errorf("chart has %d CRDs, config/crd %d", len(r.crds), len(installed))
	}
	for _, f := range r.chart.CRDObjects() {
		if !bytes.Equal(f.File.Data, installed[filepath.Base(f.Name)]) {
			t.Errorf("chart crds/%s differs from config/crd's output", f.Name)
		}
	}

	sa := one[corev1.ServiceAccount](t, r, "ServiceAccount")
	cr := one[rbacv1.ClusterRole](t, r, "ClusterRole")
	if !reflect.DeepEqual(cr.Rules, configClusterRoleRules(t)) {
		t.Errorf("chart ClusterRole rules differ from config/rbac/role.yaml:\n got %+v\nwant %+v", cr.Rules, configClusterRoleRules(t))
	}
	crb := one[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding")
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != cr.Name || !bindsSA(crb.Subjects, sa.Name, ns) {
		t.Errorf("ClusterRoleBinding %+v does not bind ClusterRole %s to %s/%s", crb, cr.Name, ns, sa.Name)
	}
	var le rbacv1.Role
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(root, "config/rbac/leader_election_role.yaml")), &le); err != nil {
		t.Fatal(err)
	}
	roles := all[rbacv1.Role](t, r, "Role")
	bindings := all[rbacv1.RoleBinding](t, r, "RoleBinding")
	for what, rules := range map[string][]rbacv1.PolicyRule{
		"leader election (config/rbac/leader_election_role.yaml)":       le.Rules,
		"webhook certificate (config/rbac/role.yaml's namespaced Role)": configNamespacedRoleRules(t),
	} {
		var role *rbacv1.Role
		for _, ro := range roles {
			if reflect.DeepEqual(ro.Rules, rules) {
				role = ro
			}
		}
		if role == nil {
			t.Errorf("no Role with the %s rules %+v", what, rules)
			continue
		}
		bound := false
		for _, rb := range bindings {
			bound = bound || rb.RoleRef.Kind == "Role" && rb.RoleRef.Name == role.Name && bindsSA(rb.Subjects, sa.Name, ns)
		}
		if !bound {
			t.Errorf("no RoleBinding binds the %s Role %s to %s/%s", what, role.Name, ns, sa.Name)
		}
	}

	dep := one[appsv1.Deployment](t, r, "Deployment")
	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name {
		t.Errorf("Deployment runs as %q, want %q", pod.ServiceAccountName, sa.Name)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if wantImage := "example.com/etcd-operator:v" + r.chart.Metadata.AppVersion; c.Image != wantImage {
		t.Errorf("image %q, want %q (the tag defaults to v<appVersion>)", c.Image, wantImage)
	}
	if e := envVar(c.Env, "WATCH_NAMESPACE"); e != nil {
		t.Errorf("WATCH_NAMESPACE = %+v by default; want unset (all namespaces)", e)
	}
	if e := envVar(c.Env, "POD_NAMESPACE"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE = %+v, want the downward API namespace", e)
	}
	// main sets Go's soft memory limit to 90% of MEMORY_LIMIT unless GOMEMLIMIT is set.
	if e := envVar(c.Env, "MEMORY_LIMIT"); !memoryLimitFromDownwardAPI(e) {
		t.Errorf("MEMORY_LIMIT = %+v, want the downward API's limits.memory", e)
	}
	if e := envVar(c.Env, "GOMEMLIMIT"); e != nil {
		t.Errorf("GOMEMLIMIT = %+v by default; want unset (main derives it from MEMORY_LIMIT)", e)
	}
	for k, v := range dep.Spec.Selector.MatchLabels {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod template labels %v", k, v, dep.Spec.Template.Labels)
		}
	}

	// The conversion webhook's Service reaches the manager's webhook port, and with the
	// default release name it is the one the CRDs name (the operator re-points them for
	// other names).
	svc := one[corev1.Service](t, r, "Service")
	for _, crd := range webhookCRDs(t, crdObjects(t, r)) {
		ref := crd.Spec.Conversion.Webhook.ClientConfig.Service
		if ref.Name != svc.Name || ref.Namespace != ns {
			t.Errorf("CRD %s converts through %s/%s, the chart's Service is %s/%s", crd.Name, ref.Namespace, ref.Name, ns, svc.Name)
		}
		if len(svc.Spec.Ports) != 1 || ref.Port == nil || svc.Spec.Ports[0].Port != *ref.Port {
			t.Errorf("Service ports %+v, CRD %s port %v", svc.Spec.Ports, crd.Name, ref.Port)
		}
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the operator pods %v", svc.Spec.Selector, dep.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) == 1 {
		tp, found := svc.Spec.Ports[0].TargetPort, false
		for _, p := range c.Ports {
			found = found || (tp.StrVal != "" && p.Name == tp.StrVal || tp.StrVal == "" && int(p.ContainerPort) == tp.IntValue()) && p.ContainerPort == int32(bundlegen.DefaultWebhookPort)
		}
		if !found {
			t.Errorf("Service targetPort %s is not the manager's webhook port %d (ports %+v)", tp.String(), bundlegen.DefaultWebhookPort, c.Ports)
		}
	}

	// The container is config/manager's, apart from image, pull policy and env.
	m := configManager(t).Spec.Template.Spec
	mc := m.Containers[0]
	checks := map[string][2]any{
		"command":         {c.Command, mc.Command},
		"args":            {c.Args, mc.Args},
		"ports":           {c.Ports, mc.Ports},
		"livenessProbe":   {c.LivenessProbe, mc.LivenessProbe},
		"readinessProbe":  {c.ReadinessProbe, mc.ReadinessProbe},
		"securityContext": {c.SecurityContext, mc.SecurityContext},
		"resources":       {c.Resources, mc.Resources},
		"podSecurity":     {pod.SecurityContext, m.SecurityContext},
		"grace":           {pod.TerminationGracePeriodSeconds, m.TerminationGracePeriodSeconds},
		"volumes":         {pod.Volumes, m.Volumes},
		"volumeMounts":    {c.VolumeMounts, mc.VolumeMounts},
	}
	for name, pair := range checks {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("container %s differs from config/manager: chart %+v, config %+v", name, pair[0], pair[1])
		}
	}
	checkHardenedManager(t, pod)

	// The NetworkPolicy selects the operator pods and lets in only the webhook and
	// metrics ports, as config/manager's does.
	np := one[networkingv1.NetworkPolicy](t, r, "NetworkPolicy")
	if !labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(labels.Set(dep.Spec.Template.Labels)) || len(np.Spec.PodSelector.MatchLabels) == 0 {
		t.Errorf("NetworkPolicy selects %v, not the operator pods %v", np.Spec.PodSelector.MatchLabels, dep.Spec.Template.Labels)
	}
	var cnp networkingv1.NetworkPolicy
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(root, "config/manager/network_policy.yaml")), &cnp); err != nil {
		t.Fatal(err)
	}
	for what, p := range map[string]*networkingv1.NetworkPolicy{"chart": np, "config/manager": &cnp} {
		if got := ingressPorts(p); !reflect.DeepEqual(got, []int{8443, 9443}) {
			t.Errorf("%s NetworkPolicy lets in ports %v, want only the metrics and webhook ports [8443 9443]", what, got)
		}
		if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			t.Errorf("%s NetworkPolicy types %v, want Ingress and Egress", what, p.Spec.PolicyTypes)
		}
	}
	if !reflect.DeepEqual(np.Spec.Egress, cnp.Spec.Egress) {
		t.Errorf("chart egress %+v differs from config/manager's %+v", np.Spec.Egress, cnp.Spec.Egress)
	}
}

// checkHardenedManager: the manager container runs on a read-only root file system with
// a size-limited /tmp emptyDir, asks for and is limited in ephemeral storage, and serves
// metrics over HTTPS with authentication (no --metrics-secure=false) on its metrics port.
func checkHardenedManager(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	c := pod.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("manager securityContext %+v: want readOnlyRootFilesystem", sc)
	}
	tmp := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/tmp" {
			tmp = m.Name
		}
	}
	sized := false
	for _, v := range pod.Volumes {
		sized = sized || v.Name == tmp && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && !v.EmptyDir.SizeLimit.IsZero()
	}
	if !sized {
		t.Errorf("/tmp is not a size-limited emptyDir (mounts %+v, volumes %+v)", c.VolumeMounts, pod.Volumes)
	}
	if _, ok := c.Resources.Requests[corev1.ResourceEphemeralStorage]; !ok {
		t.Errorf("no ephemeral-storage request: %+v", c.Resources)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; !ok {
		t.Errorf("no ephemeral-storage limit: %+v", c.Resources)
	}
	if !slices.Contains(c.Args, "--metrics-bind-address=:8443") || slices.Contains(c.Args, "--metrics-secure=false") {
		t.Errorf("manager args %q: want secure metrics on :8443", c.Args)
	}
}

func ingressPorts(p *networkingv1.NetworkPolicy) []int {
	var out []int
	for _, r := range p.Spec.Ingress {
		if len(r.From) != 0 {
			continue
		}
		for _, port := range r.Ports {
			out = append(out, port.Port.IntValue())
		}
	}
	slices.Sort(out)
	return out
}

func bindsSA(subjects []rbacv1.Subject, name, ns string) bool {
	return len(subjects) == 1 && subjects[0].Kind == "ServiceAccount" && subjects[0].Name == name && subjects[0].Namespace == ns
}

// TestChartValues renders with every value set and checks each reaches the Deployment;
// with watchNamespace set the operator is told the namespace; no value but
// watchNamespace changes the RBAC.
func TestChartValues(t *testing.T) {
	def := mustRender(t, nil)
	r := mustRender(t, allValues())
	dep := one[appsv1.Deployment](t, r, "Deployment")
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]

	if e := envVar(c.Env, "WATCH_NAMESPACE"); e == nil || e.Value != "team-a" {
		t.Errorf("WATCH_NAMESPACE = %+v, want team-a", e)
	}
	if e := envVar(c.Env, "GOMEMLIMIT"); e == nil || e.Value != "200MiB" {
		t.Errorf("GOMEMLIMIT = %+v, want goMemLimit's 200MiB", e)
	}
	if c.Image != "mirror/etcd-operator:dev" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %q policy %q", c.Image, c.ImagePullPolicy)
	}
	if !slices.Contains(c.Args, "--allow-external-backup-endpoints") || slices.Contains(one[appsv1.Deployment](t, def, "Deployment").Spec.Template.Spec.Containers[0].Args, "--allow-external-backup-endpoints") {
		t.Errorf("allowExternalBackupEndpoints: args %q; the default must not allow external endpoints", c.Args)
	}
	if !slices.Contains(c.Args, "--scope-annotation=clusterwide") || slices.ContainsFunc(one[appsv1.Deployment](t, def, "Deployment").Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--scope-annotation") }) {
		t.Errorf("scopeAnnotation: args %q; the default must manage every cluster (no --scope-annotation)", c.Args)
	}
	if !slices.Contains(c.Args, "--shard-key=etcd.database.coreos.com/shard") || !slices.Contains(c.Args, "--shard=eu-2") || !slices.Contains(c.Args, "--shard-default") ||
		slices.ContainsFunc(one[appsv1.Deployment](t, def, "Deployment").Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--shard") }) {
		t.Errorf("shard: args %q; the default must not shard (no --shard flags)", c.Args)
	}
	if !slices.Contains(c.Args, "--allow-ambient-s3-credentials=true") || !slices.Contains(one[appsv1.Deployment](t, def, "Deployment").Spec.Template.Spec.Containers[0].Args, "--allow-ambient-s3-credentials=false") {
		t.Errorf("allowAmbientS3Credentials: args %q; the default must not lend the operator's S3 identity", c.Args)
	}
	// The flags the operator's defaults leave off: given, each is passed; by default none is.
	for _, want := range []string{"--client-service-types=NodePort", "--client-service-types=LoadBalancer", "--allow-client-service-metadata",
		"--allowed-priority-classes=etcd-high", "--allowed-priority-classes=system-cluster-critical", "--allowed-cluster-issuers=shared-ca",
		"--max-backup-bytes=1073741824", "--backup-hash-timeout=15m", "--kube-api-qps=80.5", "--kube-api-burst=160", "--cluster-workers=16"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %s", c.Args, want)
		}
		flag, _, _ := strings.Cut(want, "=")
		if slices.ContainsFunc(one[appsv1.Deployment](t, def, "Deployment").Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, flag) }) {
			t.Errorf("the default install passes %s; the operator's own default must hold", flag)
		}
	}
	if !slices.Contains(c.Args, "--cluster-domain=example.local") || !slices.Contains(c.Args, "--zap-log-level=debug") || !slices.Contains(c.Args, "--leader-elect") {
		t.Errorf("args %q lack the cluster domain, extra args or leader election", c.Args)
	}
	if *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %d", *dep.Spec.Replicas)
	}
	// Helm merges maps with the defaults: the given requests replace the default ones and
	// the default memory limit stays (`--set resources.limits=null` removes it).
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Requests.Memory().String() != "128Mi" || c.Resources.Limits.Memory().String() != "256Mi" {
		t.Errorf("resources %+v: want the given requests and the default limit", c.Resources)
	}
	if v, ok := pod.NodeSelector["node-role.kubernetes.io/infra"]; !ok || v != "" || len(pod.NodeSelector) != 1 {
		t.Errorf("nodeSelector %v", pod.NodeSelector)
	}
	if len(pod.Tolerations) != 1 || pod.Tolerations[0].Operator != corev1.TolerationOpExists || pod.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("tolerations %+v", pod.Tolerations)
	}
	if pod.Affinity != nil {
		t.Errorf("empty affinity rendered as %+v", pod.Affinity)
	}
	if pod.PriorityClassName != "system-cluster-critical" || len(pod.ImagePullSecrets) != 1 {
		t.Errorf("priorityClassName %q imagePullSecrets %v", pod.PriorityClassName, pod.ImagePullSecrets)
	}
	if dep.Spec.Template.Annotations["example.com/note"] != "x" || dep.Spec.Template.Labels["team"] != "storage" {
		t.Errorf("pod annotations %v labels %v", dep.Spec.Template.Annotations, dep.Spec.Template.Labels)
	}
	for k, v := range dep.Spec.Selector.MatchLabels {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels", k, v)
		}
	}
	// watchNamespace moves RBAC into that namespace (TestChartWatchNamespaceRBAC); no
	// other value changes it.
	others := allValues()
	delete(others, "watchNamespace")
	ro := mustRender(t, others)
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		a, b := allKind(def, kind), allKind(ro, kind)
		if len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Errorf("%s changed with the values set; RBAC must not depend on them", kind)
		}
	}
}

func allKind(r *release, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o.Object)
		}
	}
	return out
}

// all converts every rendered object of a kind.
func all[T any](t *testing.T, r *release, kind string) []*T {
	t.Helper()
	var out []*T
	for _, o := range r.objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true); err != nil {
			t.Fatalf("%s %s: %v", kind, o.GetName(), err)
		}
		out = append(out, v)
	}
	return out
}

// crdObjects converts the chart's crds/.
func crdObjects(t *testing.T, r *release) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, o := range r.crds {
		c := &apiextensionsv1.CustomResourceDefinition{}
		fromUnstructured(t, o, c)
		out = append(out, c)
	}
	return out
}

func findKind(r *release, kind string) *unstructured.Unstructured {
	for _, o := range r.objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

// TestChartExistingServiceAccount: with serviceAccount.create=false the chart creates no
// ServiceAccount, binds and runs the named one, and refuses to render without a name.
func TestChartExistingServiceAccount(t *testing.T) {
	r := mustRender(t, map[string]any{"serviceAccount": map[string]any{"create": false, "name": "ops"}})
	if findKind(r, "ServiceAccount") != nil {
		t.Error("a ServiceAccount was rendered with serviceAccount.create=false")
	}
	if dep := one[appsv1.Deployment](t, r, "Deployment"); dep.Spec.Template.Spec.ServiceAccountName != "ops" {
		t.Errorf("Deployment runs as %q, want ops", dep.Spec.Template.Spec.ServiceAccountName)
	}
	if crb := one[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding"); !bindsSA(crb.Subjects, "ops", "etcd-operator-system") {
		t.Errorf("ClusterRoleBinding subjects %+v", crb.Subjects)
	}
	_, err := renderChart(t, map[string]any{"serviceAccount": map[string]any{"create": false}}, "etcd-operator", "etcd-operator-system")
	if err == nil || !strings.Contains(err.Error(), "serviceAccount.name is required") {
		t.Errorf("render without a service account name: err %v, want a clear refusal", err)
	}
	// rbac.create=false leaves RBAC to the installer.
	r = mustRender(t, map[string]any{"rbac": map[string]any{"create": false}})
	for _, o := range r.objs {
		if strings.HasPrefix(o.GetAPIVersion(), "rbac.authorization.k8s.io/") {
			t.Errorf("rendered %s with rbac.create=false", o.GetKind())
		}
	}
}

// TestChartFollowsBundleVersion keeps the chart's appVersion (and so its default image
// tag) equal to the OLM bundle's operator version and image, and its kubeVersion
// constraint consistent with the CSV's minKubeVersion.
func TestChartFollowsBundleVersion(t *testing.T) {
	b := loadCommitted(t)
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if v := b.CSV.Spec.Version.String(); ch.Metadata.AppVersion != v || ch.Metadata.Version != v {
		t.Errorf("chart version %s appVersion %s, bundle version %s: bump Chart.yaml with the bundle", ch.Metadata.Version, ch.Metadata.AppVersion, v)
	}
	dep := one[appsv1.Deployment](t, mustRender(t, nil), "Deployment")
	if img := b.CSV.Annotations["containerImage"]; dep.Spec.Template.Spec.Containers[0].Image != img {
		t.Errorf("chart default image %q, bundle image %q", dep.Spec.Template.Spec.Containers[0].Image, img)
	}
	if !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, b.CSV.Spec.MinKubeVersion) {
		t.Errorf("chart kubeVersion %q excludes the CSV's minKubeVersion %s", ch.Metadata.KubeVersion, b.CSV.Spec.MinKubeVersion)
	}
}

// TestChartPlainMetrics: metrics.secure=false serves plain HTTP on 8080 (the flag says
// so), the NetworkPolicy lets that port in, and no metrics reader is rendered for it.
func TestChartPlainMetrics(t *testing.T) {
	r := mustRender(t, map[string]any{"metrics": map[string]any{"secure": false}, "podMonitor": map[string]any{"enabled": true}})
	c := one[appsv1.Deployment](t, r, "Deployment").Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--metrics-secure=false") || !slices.Contains(c.Args, "--metrics-bind-address=:8080") {
		t.Errorf("args %q: want plain metrics on :8080", c.Args)
	}
	port := int32(0)
	for _, p := range c.Ports {
		if p.Name == "metrics" {
			port = p.ContainerPort
		}
	}
	np := one[networkingv1.NetworkPolicy](t, r, "NetworkPolicy")
	if got := ingressPorts(np); port != 8080 || !reflect.DeepEqual(got, []int{8080, 9443}) {
		t.Errorf("metrics port %d, NetworkPolicy lets in %v; want 8080 and 9443", port, got)
	}
	monitors := 0
	for _, o := range r.objs {
		if strings.Contains(o.GetName(), "metrics-reader") {
			t.Errorf("%s %s rendered for plain metrics", o.GetKind(), o.GetName())
		}
		if o.GetKind() == "PodMonitor" {
			monitors++
			if eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "podMetricsEndpoints"); len(eps) != 1 || eps[0].(map[string]any)["scheme"] != nil {
				t.Errorf("PodMonitor %s endpoints %v: want plain HTTP", o.GetName(), eps)
			}
		}
	}
	if monitors != 2 {
		t.Errorf("%d PodMonitors rendered, want 2", monitors)
	}
}

// TestChartSchemaRefusesBadValues: values.schema.json refuses, before anything renders,
// a misspelt top-level key and values the operator would refuse at start or that would
// widen what tenants get by accident.
func TestChartSchemaRefusesBadValues(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"misspelt key":            {"clientServiceType": []any{"NodePort"}},
		"unknown service type":    {"clientServiceTypes": []any{"ExternalName"}},
		"metadata as a string":    {"allowClientServiceMetadata": "true"},
		"bytes as a size":         {"maxBackupBytes": "16Gi"},
		"timeout without units":   {"backupHashTimeout": "600"},
		"zero qps":                {"kubeAPIQPS": 0},
		"no workers":              {"clusterWorkers": 0},
		"unknown scope":           {"scopeAnnotation": "all"},
		"shard not a DNS label":   {"shard": map[string]any{"key": "shard", "value": "Shard_2"}},
		"shard key not a key":     {"shard": map[string]any{"key": "my shard", "value": "2"}},
		"shard without a value":   {"shard": map[string]any{"key": "shard"}},
		"shard value without key": {"shard": map[string]any{"value": "b"}},
		"shard default alone":     {"shard": map[string]any{"default": true}},
		"class not a name":        {"allowedPriorityClasses": []any{"Gold Class"}},
		"issuer not a name":       {"allowedClusterIssuers": []any{"shared ca"}},
		"GOMEMLIMIT in SI units":  {"goMemLimit": "200M"},
		"GOMEMLIMIT as a share":   {"goMemLimit": "90%"},
		"digest not sha256":       {"image": map[string]any{"repository": "r/etcd-operator", "digest": "v0.2.0"}},
	} {
		if _, err := renderChart(t, vals, "etcd-operator", "etcd-operator-system"); err == nil {
			t.Errorf("%s: %v rendered", name, vals)
		}
	}
}

// TestChartRefusesShardValuesWithoutKey: shard.value or shard.default without shard.key
// would render an instance that manages every cluster (no --shard flags), beside the
// shards meant to split them; refused by the schema and, should it be skipped, by the
// template, naming the value to set.
func TestChartRefusesShardValuesWithoutKey(t *testing.T) {
	for name, shard := range map[string]map[string]any{
		"value":   {"value": "b"},
		"default": {"default": true},
		"both":    {"value": "a", "default": true},
	} {
		for _, withSchema := range []bool{true, false} {
			_, err := renderChartSchema(t, map[string]any{"shard": shard}, "etcd-operator", "etcd-operator-system", withSchema)
			if err == nil {
				t.Errorf("%s (schema %v): shard %v without key rendered", name, withSchema, shard)
			} else if !withSchema && !strings.Contains(err.Error(), "shard.key") {
				t.Errorf("%s: error %q does not name shard.key", name, err)
			}
		}
	}
	if _, err := renderChart(t, map[string]any{"shard": map[string]any{"key": "shard", "value": "b"}}, "etcd-operator", "etcd-operator-system"); err != nil {
		t.Errorf("a key with its value: %v", err)
	}
}

// TestChartRendersShardGuardOnlyInTheDefaultRelease: the fleet's one shard guard is
// rendered by its shard.default release; asked of another release it is refused, naming
// shard.default, so a fleet does not get one copy per release.
func TestChartRendersShardGuardOnlyInTheDefaultRelease(t *testing.T) {
	// A group with quotes and a backslash reaches CEL as a JSON string, not as YAML or CEL.
	const odd = `fleet"admins'\\`
	guarded := func(dflt bool) map[string]any {
		return map[string]any{"shard": map[string]any{"key": "shard", "value": "b", "default": dflt,
			"guard": map[string]any{"enabled": true, "adminGroups": []any{odd}}}}
	}
	if _, err := renderChart(t, guarded(false), "etcd-operator", "etcd-operator-system"); err == nil || !strings.Contains(err.Error(), "shard.default") {
		t.Errorf("shard.guard.enabled without shard.default: %v, want a refusal naming shard.default", err)
	}
	r, err := renderChart(t, guarded(true), "etcd-operator", "etcd-operator-system")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range r.objs {
		if !strings.HasSuffix(o.GetName(), "-etcdcluster-shard-guard") {
			continue
		}
		n++
		if o.GetKind() == "ValidatingAdmissionPolicy" {
			conds, _, _ := unstructured.NestedSlice(o.Object, "spec", "matchConditions")
			want := `g in ["fleet\"admins'\\\\"]`
			if len(conds) != 1 || !strings.Contains(conds[0].(map[string]any)["expression"].(string), want) {
				t.Errorf("matchConditions %v: want the group as the CEL string %s", conds, want)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d shard guard objects rendered, want the policy and its binding", n)
	}
}

// TestChartImageDigestWinsOverTag: with image.digest set the image is repository@digest
// and image.tag is not used (values.yaml and the schema say so, since a packaged
// release sets the digest and --set image.tag alone then changes nothing); with the
// digest emptied the tag is used.
func TestChartImageDigestWinsOverTag(t *testing.T) {
	const dg = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		image map[string]any
		want  string
	}{
		{map[string]any{"repository": "r/op", "tag": "v9", "digest": dg}, "r/op@" + dg},
		{map[string]any{"repository": "r/op", "tag": "v9", "digest": ""}, "r/op:v9"},
	} {
		dep := one[appsv1.Deployment](t, mustRender(t, map[string]any{"image": c.image}), "Deployment")
		if got := dep.Spec.Template.Spec.Containers[0].Image; got != c.want {
			t.Errorf("image values %v: runs %s, want %s", c.image, got, c.want)
		}
	}
}
