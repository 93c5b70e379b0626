package olm

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/etcd-operator/etcd-operator/hack/bundle/bundlegen"
)

// webhookCRDs returns the CRDs that convert through a webhook, sorted by name, and fails
// the test for a CRD serving several versions without one: the None strategy only
// rewrites apiVersion, which is wrong as soon as two versions' schemas differ.
func webhookCRDs(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, c := range crds {
		served := 0
		for _, v := range c.Spec.Versions {
			if v.Served {
				served++
			}
		}
		conv := c.Spec.Conversion
		if conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
			out = append(out, c)
		} else if served > 1 {
			t.Errorf("CRD %s serves %d versions but has no conversion webhook", c.Name, served)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TestConversionWebhookWiring checks the committed CSV hands the CRDs' conversion
// webhook to OLM correctly: one ConversionWebhook definition naming every converting
// CRD, served by the manager deployment on the port the operator listens on, with the
// CRDs' path, port and review versions; only the AllNamespaces install mode (OLM's and
// the validator's rule for conversion webhooks); and the operator told OLM provides the
// certificate, while config/manager's plain install keeps the operator's own.
func TestConversionWebhookWiring(t *testing.T) {
	b := loadCommitted(t)
	crds := webhookCRDs(t, b.V1CRDs)
	dep := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0]
	manager := dep.Spec.Template.Spec.Containers[0]
	cfgArgs := configManager(t).Spec.Template.Spec.Containers[0].Args
	if hasArg(cfgArgs, bundlegen.WebhookCertsFlag+"="+bundlegen.WebhookCertsProvided) {
		t.Errorf("config/manager passes %s=%s; the plain install has no one to provide certificates", bundlegen.WebhookCertsFlag, bundlegen.WebhookCertsProvided)
	}
	if len(crds) == 0 {
		if len(b.CSV.Spec.WebhookDefinitions) != 0 || strings.Contains(strings.Join(manager.Args, " "), bundlegen.WebhookCertsFlag) {
			t.Errorf("no CRD converts through a webhook, yet the CSV declares %+v and passes %q", b.CSV.Spec.WebhookDefinitions, manager.Args)
		}
		return
	}

	if len(b.CSV.Spec.WebhookDefinitions) != 1 {
		t.Fatalf("CSV has %d webhook definitions, want one conversion webhook", len(b.CSV.Spec.WebhookDefinitions))
	}
	w := b.CSV.Spec.WebhookDefinitions[0]
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	svc := crds[0].Spec.Conversion.Webhook.ClientConfig.Service
	if svc == nil || svc.Path == nil || svc.Port == nil {
		t.Fatalf("CRD %s conversion clientConfig.service %+v: want name, namespace, path and port", crds[0].Name, svc)
	}
	if w.Type != v1alpha1.ConversionWebhook || !reflect.DeepEqual(w.ConversionCRDs, names) {
		t.Errorf("webhook type %s conversionCRDs %v, want ConversionWebhook for %v", w.Type, w.ConversionCRDs, names)
	}
	if w.DeploymentName != dep.Name {
		t.Errorf("webhook deploymentName %q, CSV deployment %q", w.DeploymentName, dep.Name)
	}
	if w.ContainerPort != *svc.Port || w.WebhookPath == nil || *w.WebhookPath != *svc.Path {
		t.Errorf("webhook port %d path %v, the CRDs' service port %d path %s", w.ContainerPort, w.WebhookPath, *svc.Port, *svc.Path)
	}
	if w.TargetPort == nil || w.TargetPort.IntValue() != bundlegen.DefaultWebhookPort {
		t.Errorf("webhook targetPort %v, want the operator's webhook port %d", w.TargetPort, bundlegen.DefaultWebhookPort)
	}
	if w.SideEffects == nil || *w.SideEffects != "None" || !slices.Contains(w.AdmissionReviewVersions, "v1") ||
		!reflect.DeepEqual(w.AdmissionReviewVersions, crds[0].Spec.Conversion.Webhook.ConversionReviewVersions) {
		t.Errorf("webhook sideEffects %v reviewVersions %v; want None and the CRDs' %v (with v1)", w.SideEffects, w.AdmissionReviewVersions, crds[0].Spec.Conversion.Webhook.ConversionReviewVersions)
	}
	for _, c := range crds[1:] {
		o := c.Spec.Conversion.Webhook
		if !reflect.DeepEqual(o.ClientConfig.Service, svc) || !reflect.DeepEqual(o.ConversionReviewVersions, w.AdmissionReviewVersions) {
			t.Errorf("CRD %s converts through %+v, %s through %+v: one webhook cannot serve both", c.Name, o.ClientConfig.Service, crds[0].Name, svc)
		}
	}

	for _, m := range b.CSV.Spec.InstallModes {
		if m.Supported != (m.Type == v1alpha1.InstallModeTypeAllNamespaces) {
			t.Errorf("install mode %s supported=%v: with a conversion webhook only AllNamespaces may be", m.Type, m.Supported)
		}
	}

	if n := countPrefix(manager.Args, bundlegen.WebhookCertsFlag); n != 1 || !hasArg(manager.Args, bundlegen.WebhookCertsFlag+"="+bundlegen.WebhookCertsProvided) {
		t.Errorf("CSV manager args %q: want %s=%s exactly once", manager.Args, bundlegen.WebhookCertsFlag, bundlegen.WebhookCertsProvided)
	}
	// OLM mounts the certificate in controller-runtime's default directory; an
	// argument moving the operator's directory elsewhere would miss it.
	for _, a := range manager.Args {
		if strings.Contains(a, "cert-dir") {
			t.Errorf("CSV manager arg %q: the operator must read OLM's certificate from the default directory", a)
		}
	}
}

func hasArg(args []string, a string) bool { return slices.Contains(args, a) }

func countPrefix(args []string, flag string) int {
	n := 0
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			n++
		}
	}
	return n
}
