package olmrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/etcd-operator/etcd-operator/hack/catalog/olmimage"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options say which bundle to install where.
type Options struct {
	// Client talks to the cluster; its scheme must know OLM's operators.coreos.com
	// types (AddToScheme) and core/v1.
	Client client.Client
	// Namespace is the install namespace: the OperatorGroup, CatalogSource, Subscription
	// and CSV live there. It is created if missing.
	Namespace string
	// BundleImage is the bundle to install or upgrade to, pushed where the cluster pulls.
	BundleImage string
	// CatalogImage is where the catalog serving it is pushed (default
	// CatalogImageFor(BundleImage)); the cluster must be able to pull it.
	CatalogImage string
	// OPMDir holds opm and grpc_health_probe (hack/tools.sh olm).
	OPMDir string
	// Timeout bounds the wait for the CSV (default 5 minutes).
	Timeout time.Duration
	// Logf reports progress (default: discard).
	Logf func(format string, args ...any)
}

func (o *Options) defaults() error {
	if o.Client == nil || o.Namespace == "" || o.BundleImage == "" || o.OPMDir == "" {
		return errors.New("olmrun: Client, Namespace, BundleImage and OPMDir are required")
	}
	if o.CatalogImage == "" {
		img, err := CatalogImageFor(o.BundleImage)
		if err != nil {
			return err
		}
		o.CatalogImage = img
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return nil
}

// Run installs BundleImage as `operator-sdk run bundle` does: a catalog serving only
// that bundle, an OperatorGroup if the namespace has none (AllNamespaces when the CSV
// supports it, else OwnNamespace), a Subscription starting at the bundle's CSV with
// manual approval, its InstallPlan approved, and the CSV waited for until Succeeded. It
// returns the CSV's name. The package must not be subscribed to in the namespace yet.
func Run(ctx context.Context, o Options) (string, error) {
	b, work, err := start(ctx, &o)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	pkg, channel := b.ann[olmimage.PackageAnnotation], channelOf(b)
	c := o.Client
	if sub, err := findSubscription(ctx, c, o.Namespace, pkg); err != nil {
		return "", err
	} else if sub != nil {
		return "", fmt.Errorf("package %s is already subscribed to in %s (Subscription %s, installed %q): use run-bundle-upgrade, or delete the Subscription and its CSV first",
			pkg, o.Namespace, sub.Name, sub.Status.InstalledCSV)
	}
	o.Logf("bundle %s: CSV %s of package %s, channel %s", o.BundleImage, b.csv.Name, pkg, channel)

	if err := pushCatalog(o.OPMDir, channel, o.CatalogImage, []pulledBundle{b}, work); err != nil {
		return "", err
	}
	o.Logf("catalog serving it pushed as %s", o.CatalogImage)

	if err := ensureNamespace(ctx, c, o.Namespace); err != nil {
		return "", err
	}
	if err := ensureOperatorGroup(ctx, o, pkg, b); err != nil {
		return "", err
	}
	cs, err := catalogSource(o.Namespace, pkg, o.CatalogImage, []string{o.BundleImage})
	if err != nil {
		return "", err
	}
	if err := c.Create(ctx, cs); apierrors.IsAlreadyExists(err) {
		// Left by an earlier run whose Subscription is gone: point it at this catalog.
		old := &v1alpha1.CatalogSource{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cs), old); err != nil {
			return "", err
		}
		old.Spec, old.Annotations = cs.Spec, mergeAnnotations(old.Annotations, cs.Annotations)
		if err := c.Update(ctx, old); err != nil {
			return "", fmt.Errorf("update CatalogSource %s: %w", cs.Name, err)
		}
	} else if err != nil {
		return "", fmt.Errorf("create CatalogSource %s: %w", cs.Name, err)
	}
	o.Logf("CatalogSource %s/%s created", o.Namespace, cs.Name)

	if err := c.Create(ctx, subscription(o.Namespace, pkg, channel, b.csv.Name)); err != nil {
		return "", fmt.Errorf("create Subscription %s: %w", pkg, err)
	}
	o.Logf("Subscription %s/%s created (channel %s, starting at %s, manual approval)", o.Namespace, pkg, channel, b.csv.Name)
	return b.csv.Name, approveAndWait(ctx, o, pkg, b.csv.Name)
}

// Upgrade moves a package installed by Run to BundleImage as `operator-sdk run
// bundle-upgrade` does: the run-bundle catalog is rebuilt with the installed bundles and
// the new one, the CatalogSource pointed at it, and the upgrade's InstallPlan approved
// and waited for. The new CSV must upgrade from the installed one (replaces or skips),
// since that is the edge OLM follows. It returns the new CSV's name.
func Upgrade(ctx context.Context, o Options) (string, error) {
	next, work, err := start(ctx, &o)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	pkg := next.ann[olmimage.PackageAnnotation]
	c := o.Client
	sub, err := findSubscription(ctx, c, o.Namespace, pkg)
	if err != nil {
		return "", err
	}
	if sub == nil {
		return "", fmt.Errorf("package %s is not installed in %s: use run-bundle first", pkg, o.Namespace)
	}
	installed := sub.Status.InstalledCSV
	if installed == "" {
		return "", fmt.Errorf("Subscription %s/%s has no installed CSV yet (state %q)", o.Namespace, sub.Name, sub.Status.State)
	}
	if installed == next.csv.Name {
		return "", fmt.Errorf("%s is already installed", installed)
	}
	if next.csv.Replaces != installed && !slices.Contains(next.csv.Skips, installed) && next.csv.SkipRange == "" {
		return "", fmt.Errorf("%s replaces %q, not the installed %s: OLM would never upgrade to it", next.csv.Name, next.csv.Replaces, installed)
	}
	cs := &v1alpha1.CatalogSource{}
	key := client.ObjectKey{Namespace: sub.Spec.CatalogSourceNamespace, Name: sub.Spec.CatalogSource}
	if err := c.Get(ctx, key, cs); err != nil {
		return "", fmt.Errorf("the Subscription's CatalogSource %s: %w", key, err)
	}
	images, ok, err := bundlesOf(cs)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("CatalogSource %s was not made by run-bundle (no %s annotation): upgrade through that catalog instead", key, BundlesAnnotation)
	}
	var bundles []pulledBundle
	for _, img := range images {
		if img == o.BundleImage {
			continue
		}
		b, err := pullBundle(ctx, img, work)
		if err != nil {
			return "", fmt.Errorf("a bundle the catalog already serves: %w", err)
		}
		bundles = append(bundles, b)
	}
	bundles = append(bundles, next)
	if err := pushCatalog(o.OPMDir, sub.Spec.Channel, o.CatalogImage, bundles, work); err != nil {
		return "", err
	}
	o.Logf("catalog with %d bundles pushed as %s", len(bundles), o.CatalogImage)

	var list []string
	for _, b := range bundles {
		list = append(list, b.image)
	}
	want, err := catalogSource(cs.Namespace, pkg, o.CatalogImage, list)
	if err != nil {
		return "", err
	}
	cs.Spec.Image, cs.Annotations = o.CatalogImage, mergeAnnotations(cs.Annotations, want.Annotations)
	if err := c.Update(ctx, cs); err != nil {
		return "", fmt.Errorf("point CatalogSource %s at %s: %w", key, o.CatalogImage, err)
	}
	o.Logf("CatalogSource %s now serves %s; waiting for the upgrade %s -> %s", key, o.CatalogImage, installed, next.csv.Name)
	return next.csv.Name, approveAndWait(ctx, o, pkg, next.csv.Name)
}

// start fills in o's defaults and pulls the bundle into a scratch directory, work, which
// the caller removes (also when err is set: it is then "" or already removed).
func start(ctx context.Context, o *Options) (b pulledBundle, work string, err error) {
	if err := o.defaults(); err != nil {
		return pulledBundle{}, "", err
	}
	if work, err = os.MkdirTemp("", "olmrun-"); err != nil {
		return pulledBundle{}, "", err
	}
	if b, err = pullBundle(ctx, o.BundleImage, work); err != nil {
		os.RemoveAll(work)
		return pulledBundle{}, "", err
	}
	return b, work, nil
}

// findSubscription is the Subscription to pkg in ns, or nil.
func findSubscription(ctx context.Context, c client.Client, ns, pkg string) (*v1alpha1.Subscription, error) {
	var subs v1alpha1.SubscriptionList
	if err := c.List(ctx, &subs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list Subscriptions in %s (is OLM installed?): %w", ns, err)
	}
	for i := range subs.Items {
		if s := &subs.Items[i]; s.Spec != nil && s.Spec.Package == pkg {
			return s, nil
		}
	}
	return nil, nil
}

func ensureNamespace(ctx context.Context, c client.Client, ns string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// ensureOperatorGroup keeps the namespace's OperatorGroup if it has one and the CSV
// supports its mode; else it creates one.
func ensureOperatorGroup(ctx context.Context, o Options, pkg string, b pulledBundle) error {
	var groups operatorsv1.OperatorGroupList
	if err := o.Client.List(ctx, &groups, client.InNamespace(o.Namespace)); err != nil {
		return fmt.Errorf("list OperatorGroups in %s: %w", o.Namespace, err)
	}
	switch len(groups.Items) {
	case 0:
		og, err := operatorGroup(o.Namespace, pkg, b.csv.InstallModes)
		if err != nil {
			return err
		}
		if err := o.Client.Create(ctx, og); err != nil {
			return fmt.Errorf("create OperatorGroup %s: %w", og.Name, err)
		}
		o.Logf("OperatorGroup %s/%s created (%s)", o.Namespace, og.Name, groupMode(og))
		return nil
	case 1:
		og := &groups.Items[0]
		if mode := groupMode(og); !supports(b.csv.InstallModes, mode) {
			return fmt.Errorf("OperatorGroup %s/%s asks for install mode %s, which %s does not support", o.Namespace, og.Name, mode, b.csv.Name)
		}
		o.Logf("using OperatorGroup %s/%s (%s)", o.Namespace, og.Name, groupMode(og))
		return nil
	}
	return fmt.Errorf("namespace %s has %d OperatorGroups; OLM installs nothing there until only one is left", o.Namespace, len(groups.Items))
}

func mergeAnnotations(have, add map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range add {
		have[k] = v
	}
	return have
}
