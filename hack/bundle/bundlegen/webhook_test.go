package bundlegen

import (
	"reflect"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func webhookConversion(path string, port int32, versions ...string) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
				Name: "svc", Namespace: "ns", Path: &path, Port: &port,
			}},
			ConversionReviewVersions: versions,
		},
	}
}

func managerDeployment(args []string, ports ...corev1.ContainerPort) v1alpha1.StrategyDeploymentSpec {
	var d v1alpha1.StrategyDeploymentSpec
	d.Name = "etcd-operator-controller-manager"
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: ManagerContainer, Args: args, Ports: ports}}
	return d
}

// TestConversionWebhookDerived: CRDs converting through a webhook yield one
// ConversionWebhook definition listing them, aimed at the manager deployment's webhook
// port; CRDs that do not convert are left out.
func TestConversionWebhookDerived(t *testing.T) {
	both := map[string]bool{"v1beta2": true, "v1": true}
	crds := []crdFile{
		crd("etcdrestores.etcd.database.coreos.com", "EtcdRestore", both, webhookConversion("/convert", 443, "v1")),
		crd("etcdclusters.etcd.database.coreos.com", "EtcdCluster", both, webhookConversion("/convert", 443, "v1")),
		crd("other.etcd.database.coreos.com", "Other", map[string]bool{"v1": true}, nil),
	}
	for _, c := range crds {
		c.crd.Spec.Group = "etcd.database.coreos.com"
	}
	w, err := conversionWebhook(&v1alpha1.ClusterServiceVersion{}, crds, managerDeployment([]string{"--leader-elect"}))
	if err != nil {
		t.Fatal(err)
	}
	if w.Type != v1alpha1.ConversionWebhook || w.DeploymentName != "etcd-operator-controller-manager" ||
		w.ContainerPort != 443 || w.TargetPort.IntValue() != DefaultWebhookPort || *w.WebhookPath != "/convert" ||
		string(*w.SideEffects) != "None" || !reflect.DeepEqual(w.AdmissionReviewVersions, []string{"v1"}) ||
		w.GenerateName != "cetcd.database.coreos.com" {
		t.Errorf("webhook %+v", w)
	}
	if want := []string{"etcdclusters.etcd.database.coreos.com", "etcdrestores.etcd.database.coreos.com"}; !reflect.DeepEqual(w.ConversionCRDs, want) {
		t.Errorf("conversionCRDs %v, want %v (sorted, only webhook CRDs)", w.ConversionCRDs, want)
	}

	if w, err := conversionWebhook(&v1alpha1.ClusterServiceVersion{}, crds[2:], managerDeployment(nil)); w != nil || err != nil {
		t.Errorf("no webhook CRDs: %+v, %v; want nothing", w, err)
	}

	for name, tc := range map[string]struct {
		crds []crdFile
		tmpl v1alpha1.ClusterServiceVersion
		want string
	}{
		"different path": {[]crdFile{crds[0], crd("b.x", "B", both, webhookConversion("/other", 443, "v1"))}, v1alpha1.ClusterServiceVersion{}, "cannot serve both"},
		"different port": {[]crdFile{crds[0], crd("b.x", "B", both, webhookConversion("/convert", 8443, "v1"))}, v1alpha1.ClusterServiceVersion{}, "cannot serve both"},
		"url": {[]crdFile{crd("b.x", "B", both, &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: new("https://x/convert")}},
		})}, v1alpha1.ClusterServiceVersion{}, "needs webhook.clientConfig.service"},
		"no review versions": {[]crdFile{crd("b.x", "B", both, webhookConversion("/convert", 443))}, v1alpha1.ClusterServiceVersion{}, "no conversionReviewVersions"},
		"declared in base": {crds, v1alpha1.ClusterServiceVersion{Spec: v1alpha1.ClusterServiceVersionSpec{
			WebhookDefinitions: []v1alpha1.WebhookDescription{{Type: v1alpha1.ConversionWebhook, GenerateName: "c.x"}},
		}}, "derives it from the CRDs"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := conversionWebhook(&tc.tmpl, tc.crds, managerDeployment(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestWebhookTargetPort(t *testing.T) {
	named := corev1.ContainerPort{Name: WebhookPortName, ContainerPort: 9000}
	for name, tc := range map[string]struct {
		dep  v1alpha1.StrategyDeploymentSpec
		want int32
		err  string
	}{
		"default":        {managerDeployment(nil), DefaultWebhookPort, ""},
		"flag =":         {managerDeployment([]string{"--webhook-port=9100"}), 9100, ""},
		"flag space":     {managerDeployment([]string{"--webhook-port", "9200"}), 9200, ""},
		"named port":     {managerDeployment(nil, named), 9000, ""},
		"agreeing":       {managerDeployment([]string{"--webhook-port=9000"}, named), 9000, ""},
		"disagreeing":    {managerDeployment([]string{"--webhook-port=9443"}, named), 0, "but the container port"},
		"not a number":   {managerDeployment([]string{"--webhook-port=x"}), 0, "not a port"},
		"out of range":   {managerDeployment([]string{"--webhook-port=70000"}), 0, "not a port"},
		"no manager":     {v1alpha1.StrategyDeploymentSpec{}, 0, "no container"},
		"other flag too": {managerDeployment([]string{"--webhook-port-x=1", "--metrics-bind-address=:8080"}), DefaultWebhookPort, ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := webhookTargetPort(tc.dep)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestSetFlag(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, []string{"--webhook-certs=provided"}},
		{[]string{"--leader-elect"}, []string{"--leader-elect", "--webhook-certs=provided"}},
		{[]string{"--webhook-certs=self-signed", "--leader-elect"}, []string{"--leader-elect", "--webhook-certs=provided"}},
		{[]string{"--webhook-certs", "self-signed", "--leader-elect"}, []string{"--leader-elect", "--webhook-certs=provided"}},
		{[]string{"--webhook-certs-dir=/x"}, []string{"--webhook-certs-dir=/x", "--webhook-certs=provided"}},
	} {
		if got := setFlag(tc.in, WebhookCertsFlag, WebhookCertsProvided); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("setFlag(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOnlyAllNamespaces(t *testing.T) {
	modes := []v1alpha1.InstallMode{
		{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: true},
		{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: true},
		{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: false},
		{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
	}
	got, err := onlyAllNamespaces(modes)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range got {
		if m.Supported != (m.Type == v1alpha1.InstallModeTypeAllNamespaces) {
			t.Errorf("%s supported=%v", m.Type, m.Supported)
		}
	}
	if !modes[0].Supported {
		t.Error("the template's modes were modified in place")
	}
	modes[3].Supported = false
	if _, err := onlyAllNamespaces(modes); err == nil {
		t.Error("AllNamespaces unsupported: no error")
	}
	// The CSV check agrees.
	csv := &v1alpha1.ClusterServiceVersion{}
	csv.Spec.InstallModes = modes
	csv.Spec.WebhookDefinitions = []v1alpha1.WebhookDescription{{Type: v1alpha1.ConversionWebhook, ConversionCRDs: []string{"b.x"}}}
	conv := []crdFile{crd("b.x", "B", map[string]bool{"v1": true}, webhookConversion("/convert", 443, "v1"))}
	if err := checkConversionWebhooks(csv, conv); err == nil || !strings.Contains(err.Error(), "AllNamespaces") {
		t.Errorf("install modes not checked: %v", err)
	}
	csv.Spec.InstallModes = got
	if err := checkConversionWebhooks(csv, conv); err != nil {
		t.Error(err)
	}
	csv.Spec.WebhookDefinitions[0].ConversionCRDs = append(csv.Spec.WebhookDefinitions[0].ConversionCRDs, "gone.x")
	if err := checkConversionWebhooks(csv, conv); err == nil || !strings.Contains(err.Error(), "gone.x") {
		t.Errorf("conversion declared for an unshipped CRD: %v", err)
	}
}

func TestDropMountAt(t *testing.T) {
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}}},
		Containers: []corev1.Container{{Name: "manager", VolumeMounts: []corev1.VolumeMount{
			{Name: "certs", MountPath: OLMWebhookCertDir + "/"},
			{Name: "shared", MountPath: OLMWebhookCertDir},
			{Name: "data", MountPath: "/data"},
		}}},
		Volumes: []corev1.Volume{{Name: "certs"}, {Name: "shared"}, {Name: "data"}},
	}
	dropMountAt(&spec, OLMWebhookCertDir)
	var mounts, vols []string
	for _, m := range spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.Name)
	}
	for _, v := range spec.Volumes {
		vols = append(vols, v.Name)
	}
	// "shared" is still mounted elsewhere (by the init container), so its volume stays.
	if strings.Join(mounts, ",") != "data" || strings.Join(vols, ",") != "shared,data" || len(spec.InitContainers[0].VolumeMounts) != 1 {
		t.Errorf("mounts %v volumes %v init %v", mounts, vols, spec.InitContainers[0].VolumeMounts)
	}
}
