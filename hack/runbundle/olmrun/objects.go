package olmrun

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/hack/catalog/olmimage"
)

// BundlesAnnotation on the CatalogSource lists, oldest first as JSON, the bundle images
// its catalog serves. It marks the catalog as run-bundle's (an upgrade refuses any
// other) and lets an upgrade rebuild the catalog with the installed bundles in it, so
// OLM sees the upgrade edge from the installed CSV.
const BundlesAnnotation = "olmrun.etcd-operator.dev/bundle-images"

// CatalogImageFor is where the catalog serving bundle is pushed by default: the bundle's
// repository with "-run-catalog" appended, under the bundle's tag (a digest becomes a
// tag "sha256-<hex>"), so each bundle gets its own catalog image and an upgrade never
// overwrites the catalog a running pod serves.
func CatalogImageFor(bundle string) (string, error) {
	ref, err := name.ParseReference(bundle)
	if err != nil {
		return "", fmt.Errorf("bundle image %q: %w", bundle, err)
	}
	tag := ref.Identifier()
	if _, ok := ref.(name.Digest); ok {
		tag = strings.ReplaceAll(tag, ":", "-")
	}
	return ref.Context().Name() + "-run-catalog:" + tag, nil
}

// catalogSourceName is the CatalogSource serving pkg's run-bundle catalog.
func catalogSourceName(pkg string) string { return pkg + "-run-bundle" }

func catalogSource(ns, pkg, image string, bundles []string) (*v1alpha1.CatalogSource, error) {
	list, err := json.Marshal(bundles)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{
			Name: catalogSourceName(pkg), Namespace: ns,
			Annotations: map[string]string{BundlesAnnotation: string(list)},
		},
		Spec: v1alpha1.CatalogSourceSpec{
			SourceType:  v1alpha1.SourceTypeGrpc,
			Image:       image,
			DisplayName: pkg + " (run-bundle)",
			// The catalog image runs as a non-root user with its cache built in, so the
			// pod passes Pod Security "restricted".
			GrpcPodConfig: &v1alpha1.GrpcPodConfig{SecurityContextConfig: v1alpha1.Restricted},
		},
	}, nil
}

// bundlesOf reads BundlesAnnotation; ok is false when cs is not run-bundle's.
func bundlesOf(cs *v1alpha1.CatalogSource) (bundles []string, ok bool, err error) {
	raw, ok := cs.Annotations[BundlesAnnotation]
	if !ok {
		return nil, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &bundles); err != nil || len(bundles) == 0 {
		return nil, true, fmt.Errorf("CatalogSource %s/%s: annotation %s is not a list of bundle images: %q", cs.Namespace, cs.Name, BundlesAnnotation, raw)
	}
	return bundles, true, nil
}

// operatorGroup selects every namespace when the CSV supports that mode, else only its
// own namespace; anything else needs an OperatorGroup the user makes.
func operatorGroup(ns, pkg string, modes []olmimage.InstallMode) (*operatorsv1.OperatorGroup, error) {
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: pkg, Namespace: ns}}
	switch {
	case supports(modes, v1alpha1.InstallModeTypeAllNamespaces):
	case supports(modes, v1alpha1.InstallModeTypeOwnNamespace):
		og.Spec.TargetNamespaces = []string{ns}
	default:
		return nil, fmt.Errorf("the CSV supports neither AllNamespaces nor OwnNamespace; create an OperatorGroup in %s for the mode it supports", ns)
	}
	return og, nil
}

func supports(modes []olmimage.InstallMode, t v1alpha1.InstallModeType) bool {
	for _, m := range modes {
		if m.Type == string(t) {
			return m.Supported
		}
	}
	return false
}

// groupMode says which install mode an existing OperatorGroup asks for.
func groupMode(og *operatorsv1.OperatorGroup) v1alpha1.InstallModeType {
	switch {
	case og.Spec.Selector != nil:
		return v1alpha1.InstallModeTypeMultiNamespace
	case len(og.Spec.TargetNamespaces) == 0:
		return v1alpha1.InstallModeTypeAllNamespaces
	case len(og.Spec.TargetNamespaces) == 1 && og.Spec.TargetNamespaces[0] == og.Namespace:
		return v1alpha1.InstallModeTypeOwnNamespace
	case len(og.Spec.TargetNamespaces) == 1:
		return v1alpha1.InstallModeTypeSingleNamespace
	}
	return v1alpha1.InstallModeTypeMultiNamespace
}

// subscription asks for csv from the run-bundle catalog, with manual approval so that
// nothing newer than csv is installed behind the user's back.
func subscription(ns, pkg, channel, csv string) *v1alpha1.Subscription {
	return &v1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: pkg, Namespace: ns},
		Spec: &v1alpha1.SubscriptionSpec{
			CatalogSource:          catalogSourceName(pkg),
			CatalogSourceNamespace: ns,
			Package:                pkg,
			Channel:                channel,
			StartingCSV:            csv,
			InstallPlanApproval:    v1alpha1.ApprovalManual,
		},
	}
}
