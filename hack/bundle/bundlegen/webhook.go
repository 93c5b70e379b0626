package bundlegen

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Conversion webhook wiring under OLM.
const (
	// WebhookCertsFlag selects where the operator's webhook server certificates come
	// from. The CSV passes WebhookCertsProvided: OLM creates the serving certificate,
	// mounts it at the controller-runtime default directory
	// (/tmp/k8s-webhook-server/serving-certs) and injects its CA into the CRDs'
	// conversion clientConfig. config/manager keeps the operator's own default
	// (self-signed), under which it provisions and injects certificates itself.
	WebhookCertsFlag     = "--webhook-certs"
	WebhookCertsProvided = "provided"
	// WebhookPortFlag is the operator flag for the webhook server's port, and
	// DefaultWebhookPort its default.
	WebhookPortFlag    = "--webhook-port"
	DefaultWebhookPort = 9443
	// WebhookPortName is the conventional name of the manager container's webhook port.
	WebhookPortName = "webhook-server"
	// OLMWebhookCertDir is where OLM mounts a webhook's serving certificate (and the
	// operator's default --webhook-cert-dir).
	OLMWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// dropMountAt removes every container's volume mount at dir, and the volumes only those
// mounts used.
func dropMountAt(spec *corev1.PodSpec, dir string) {
	dropped := map[string]bool{}
	kept := map[string]bool{}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			ms := cs[i].VolumeMounts[:0]
			for _, m := range cs[i].VolumeMounts {
				if strings.TrimSuffix(m.MountPath, "/") == dir {
					dropped[m.Name] = true
					continue
				}
				kept[m.Name] = true
				ms = append(ms, m)
			}
			if len(ms) == 0 {
				ms = nil
			}
			cs[i].VolumeMounts = ms
		}
	}
	vs := spec.Volumes[:0]
	for _, v := range spec.Volumes {
		if dropped[v.Name] && !kept[v.Name] {
			continue
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		vs = nil
	}
	spec.Volumes = vs
}

// conversionWebhook derives the CSV's conversion webhook from the CRDs: when any CRD
// converts through a webhook, OLM must be told (spec.webhookdefinitions, type
// ConversionWebhook), since OLM serves the webhook through a Service of its own and
// rewrites the CRDs' clientConfig to it and its CA. It returns nil when no CRD uses one.
//
// One definition serves every such CRD, so they must agree on the service path, port
// and review versions; the CRDs' clientConfig.service is otherwise what the kubectl
// install uses and OLM replaces it. Declaring the webhook in the CSV base as well is
// refused: the CRDs are the one source.
func conversionWebhook(tmpl *v1alpha1.ClusterServiceVersion, crds []crdFile, dep v1alpha1.StrategyDeploymentSpec) (*v1alpha1.WebhookDescription, error) {
	for _, w := range tmpl.Spec.WebhookDefinitions {
		if w.Type == v1alpha1.ConversionWebhook {
			return nil, fmt.Errorf("%s declares a conversion webhook (%s): remove it, the generator derives it from the CRDs' spec.conversion", CSVTemplatePath, w.GenerateName)
		}
	}
	var (
		names    []string
		group    string
		svcPath  string
		svcPort  int32
		versions []string
		errs     []error
	)
	for _, c := range crds {
		conv := c.crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
			continue
		}
		if conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
			errs = append(errs, fmt.Errorf("CRD %s: a Webhook conversion needs webhook.clientConfig.service (OLM serves it through a Service; a url cannot be)", c.crd.Name))
			continue
		}
		svc := conv.Webhook.ClientConfig.Service
		p, port := "/", int32(443) // the API server's defaults
		if svc.Path != nil {
			p = *svc.Path
		}
		if svc.Port != nil {
			port = *svc.Port
		}
		rv := append([]string(nil), conv.Webhook.ConversionReviewVersions...)
		if len(names) == 0 {
			group, svcPath, svcPort, versions = c.crd.Spec.Group, p, port, rv
		} else if c.crd.Spec.Group != group || p != svcPath || port != svcPort || strings.Join(rv, ",") != strings.Join(versions, ",") {
			errs = append(errs, fmt.Errorf("CRD %s converts through %s:%d%s (review versions %v), %s through %s:%d%s (%v): one webhook definition cannot serve both",
				c.crd.Name, c.crd.Spec.Group, port, p, rv, names[0], group, svcPort, svcPath, versions))
		}
		names = append(names, c.crd.Name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, nil
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("CRD %s: the conversion webhook lists no conversionReviewVersions", names[0])
	}
	target, err := webhookTargetPort(dep)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	none := admissionregistrationv1.SideEffectClassNone
	tp := intstr.FromInt32(target)
	return &v1alpha1.WebhookDescription{
		// OLM names the Service after the deployment; generateName only has to be a
		// unique DNS name within the CSV. The "c" marks it as the conversion webhook.
		GenerateName:            "c" + group,
		Type:                    v1alpha1.ConversionWebhook,
		DeploymentName:          dep.Name,
		ContainerPort:           svcPort,
		TargetPort:              &tp,
		SideEffects:             &none,
		AdmissionReviewVersions: versions,
		WebhookPath:             &svcPath,
		ConversionCRDs:          names,
	}, nil
}

// webhookTargetPort is the port the manager container's webhook server listens on: its
// --webhook-port argument, else its port named webhook-server, else the operator's
// default. If both the argument and the named port are there they must agree.
func webhookTargetPort(dep v1alpha1.StrategyDeploymentSpec) (int32, error) {
	c := managerContainer(dep.Spec.Template.Spec.Containers)
	if c == nil {
		return 0, fmt.Errorf("%s: no container named %q", ManagerPath, ManagerContainer)
	}
	var fromArg, fromPort int32
	if v, ok := flagValue(c.Args, WebhookPortFlag); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return 0, fmt.Errorf("%s: %s=%q is not a port", ManagerPath, WebhookPortFlag, v)
		}
		fromArg = int32(n)
	}
	for _, p := range c.Ports {
		if p.Name == WebhookPortName {
			fromPort = p.ContainerPort
		}
	}
	switch {
	case fromArg != 0 && fromPort != 0 && fromArg != fromPort:
		return 0, fmt.Errorf("%s: %s=%d but the container port %s is %d", ManagerPath, WebhookPortFlag, fromArg, WebhookPortName, fromPort)
	case fromArg != 0:
		return fromArg, nil
	case fromPort != 0:
		return fromPort, nil
	}
	return DefaultWebhookPort, nil
}

// onlyAllNamespaces returns the install modes with every mode but AllNamespaces
// unsupported. OLM (and its CSV validator) accepts conversion webhooks only from an
// operator installed for all namespaces: a CRD is cluster-wide, so its one converter
// cannot belong to an operator that only some namespaces use.
func onlyAllNamespaces(modes []v1alpha1.InstallMode) ([]v1alpha1.InstallMode, error) {
	out := make([]v1alpha1.InstallMode, len(modes))
	all := false
	for i, m := range modes {
		if m.Type == v1alpha1.InstallModeTypeAllNamespaces {
			all = m.Supported
		} else {
			m.Supported = false
		}
		out[i] = m
	}
	if !all {
		return nil, fmt.Errorf("%s: the CRDs convert through a webhook, which OLM only allows with the AllNamespaces install mode, and that is not supported", CSVTemplatePath)
	}
	return out, nil
}

// setFlag replaces every occurrence of flag (as "--f=v" or "--f v") in args with
// flag=value, appended at the end.
func setFlag(args []string, flag, value string) []string {
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == flag {
			i++ // drop its value too
			continue
		}
		if strings.HasPrefix(a, flag+"=") {
			continue
		}
		out = append(out, a)
	}
	return append(out, flag+"="+value)
}

// flagValue returns the last value of flag in args ("--f=v" or "--f v").
func flagValue(args []string, flag string) (string, bool) {
	v, found := "", false
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			v, found = args[i+1], true
		} else if s, ok := strings.CutPrefix(a, flag+"="); ok {
			v, found = s, true
		}
	}
	return v, found
}

func managerContainer(cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if cs[i].Name == ManagerContainer {
			return &cs[i]
		}
	}
	return nil
}

// WithoutCRDAccess drops the rules that only grant access to CustomResourceDefinitions:
// the operator reads and patches its CRDs only to inject its self-provisioned CA, which
// under OLM is OLM's job (and a CSV asking for CRD access draws a validator warning).
func WithoutCRDAccess(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		if len(r.APIGroups) == 1 && r.APIGroups[0] == apiextensionsv1.GroupName &&
			len(r.Resources) == 1 && r.Resources[0] == "customresourcedefinitions" {
			continue
		}
		out = append(out, r)
	}
	return out
}
