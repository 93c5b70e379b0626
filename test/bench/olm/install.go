package olm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// fieldOwner is the server-side apply manager of everything Install applies.
const fieldOwner = "bench-olm-install"

// pollInterval is how often Install looks at what it waits for.
const pollInterval = 250 * time.Millisecond

// Options configure Install.
type Options struct {
	// CacheDir is the tool cache holding OLM's chart (default testenv.CacheDir()).
	CacheDir string
	// Timeout bounds the wait for the CRDs to be Established and for both Deployments
	// to be Available (default 5 minutes: the images are pulled from the bench registry
	// on a busy machine).
	Timeout time.Duration
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// Install applies OLM to the cluster c talks to, as upstream's install script does
// (CRDs, wait for them to be Established, then the rendered chart) and waits until the
// olm-operator and catalog-operator Deployments are Available. The bench must serve
// images.OLMImage and images.OPMImage (images.Set.OLM). Objects are server-side applied,
// so Install may run again over an installed OLM. c needs no scheme for OLM's types:
// everything is handled as unstructured.
func Install(ctx context.Context, c client.Client, o Options) error {
	if o.CacheDir == "" {
		o.CacheDir = testenv.CacheDir()
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	m, err := Render(o.CacheDir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	t0 := time.Now()

	for _, crd := range m.CRDs {
		if err := apply(ctx, c, crd); err != nil {
			return err
		}
	}
	for _, crd := range m.CRDs {
		if err := waitFor(ctx, c, crd, "Established", established); err != nil {
			return err
		}
	}
	logf("olm: %d CRDs established in %v", len(m.CRDs), time.Since(t0).Round(time.Millisecond))

	for _, obj := range m.Objects {
		// The client learns OLM's kinds from discovery, which may lag the CRDs by a
		// moment: retry an object whose kind is not served yet.
		var noMatch error
		err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
			err := apply(ctx, c, obj)
			if meta.IsNoMatchError(err) {
				noMatch = err
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return errors.Join(err, noMatch)
		}
	}
	logf("olm: %d objects applied", len(m.Objects))

	for _, obj := range m.Objects {
		if obj.GetKind() != "Deployment" {
			continue
		}
		if err := waitFor(ctx, c, obj, "Available", deploymentAvailable); err != nil {
			return errors.Join(err, podProblems(context.WithoutCancel(ctx), c, obj.GetNamespace()))
		}
	}
	logf("olm: %s and %s Available %v after the first apply", OLMOperator, CatalogOperator, time.Since(t0).Round(time.Millisecond))
	return nil
}

func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", obj.GetKind(), objectName(obj), err)
	}
	return nil
}

// waitFor polls obj until ready says it is, or ctx ends.
func waitFor(ctx context.Context, c client.Client, obj *unstructured.Unstructured, what string, ready func(*unstructured.Unstructured) bool) error {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		lastErr = c.Get(ctx, client.ObjectKeyFromObject(obj), cur)
		return lastErr == nil && ready(cur), nil
	})
	if err != nil {
		return fmt.Errorf("%s %s not %s: %w (last read: %v, status: %v)", obj.GetKind(), objectName(obj), what, err, lastErr, cur.Object["status"])
	}
	return nil
}

// established: a CRD whose Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	return condition(crd, "Established") == "True"
}

// deploymentAvailable: the Deployment controller has seen the current spec and reports
// Available, with every replica updated (no old pod left serving).
func deploymentAvailable(d *unstructured.Unstructured) bool {
	observed, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration")
	replicas, found, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	updated, _, _ := unstructured.NestedInt64(d.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
	return observed >= d.GetGeneration() && updated == replicas && available >= replicas &&
		condition(d, "Available") == "True"
}

// condition is the status of the named condition in status.conditions, "" if absent.
func condition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// podProblems says why pods in ns are not ready (image pulls, crashes), for the error of
// a Deployment that did not become Available.
func podProblems(ctx context.Context, c client.Client, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods := &unstructured.UnstructuredList{}
	pods.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "PodList"})
	if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("list pods in %s: %w", ns, err)
	}
	var lines []string
	for _, p := range pods.Items {
		phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
		line := fmt.Sprintf("pod %s/%s %s", ns, p.GetName(), phase)
		statuses, _, _ := unstructured.NestedSlice(p.Object, "status", "containerStatuses")
		for _, s := range statuses {
			m, _ := s.(map[string]any)
			name, _ := m["name"].(string)
			for _, state := range []string{"waiting", "terminated"} {
				reason, _, _ := unstructured.NestedString(m, "state", state, "reason")
				msg, _, _ := unstructured.NestedString(m, "state", state, "message")
				if reason != "" {
					line += fmt.Sprintf("; %s %s: %s %s", name, state, reason, msg)
				}
			}
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return fmt.Errorf("no pods in %s", ns)
	}
	return errors.New(strings.Join(lines, "\n"))
}

func objectName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
