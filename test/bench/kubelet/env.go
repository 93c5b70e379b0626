package kubelet

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// podContext is what downward-API style lookups need besides the Pod object itself.
type podContext struct {
	pod       *v1.Pod
	podIP     string
	hostIP    string
	node      *NodeSpec
	clientset kubernetes.Interface
}

// envList keeps environment variables in definition order; a redefinition replaces the
// value in place, as the kubelet's env construction does.
type envList struct {
	keys []string
	vals map[string]string
}

func (e *envList) set(k, v string) {
	if e.vals == nil {
		e.vals = map[string]string{}
	}
	if _, ok := e.vals[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.vals[k] = v
}

func (e *envList) lookup(k string) (string, bool) { v, ok := e.vals[k]; return v, ok }

func (e *envList) list() []string {
	out := make([]string, 0, len(e.keys))
	for _, k := range e.keys {
		out = append(out, k+"="+e.vals[k])
	}
	return out
}

// containerEnv builds a container's environment the way the kubelet orders it: base
// variables (PATH, HOSTNAME, service host/port, bench extras), then envFrom sources in
// order, then env entries in order, where each env value is $(VAR)-expanded against
// everything defined before it.
func (pc *podContext) containerEnv(ctx context.Context, base []string, c *v1.Container) ([]string, error) {
	var env envList
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env.set(k, v)
		}
	}
	ns := pc.pod.Namespace
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := pc.clientset.CoreV1().ConfigMaps(ns).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
					continue
				}
				return nil, fmt.Errorf("envFrom configMap %s: %w", from.ConfigMapRef.Name, err)
			}
			for _, k := range sortedKeys(cm.Data) {
				if !strings.Contains(k, "=") {
					env.set(from.Prefix+k, cm.Data[k])
				}
			}
		case from.SecretRef != nil:
			s, err := pc.clientset.CoreV1().Secrets(ns).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
					continue
				}
				return nil, fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
			}
			keys := make([]string, 0, len(s.Data))
			for k := range s.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !strings.Contains(k, "=") {
					env.set(from.Prefix+k, string(s.Data[k]))
				}
			}
		}
	}
	for _, ev := range c.Env {
		if ev.ValueFrom == nil {
			env.set(ev.Name, expandVars(ev.Value, env.lookup))
			continue
		}
		v, skip, err := pc.envValueFrom(ctx, c, ev.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", ev.Name, err)
		}
		if !skip {
			env.set(ev.Name, v)
		}
	}
	return env.list(), nil
}

// envValueFrom resolves one valueFrom; skip is true for a missing optional key.
func (pc *podContext) envValueFrom(ctx context.Context, c *v1.Container, src *v1.EnvVarSource) (val string, skip bool, err error) {
	ns := pc.pod.Namespace
	optional := func(p *bool) bool { return p != nil && *p }
	switch {
	case src.FieldRef != nil:
		v, err := pc.fieldValue(src.FieldRef.FieldPath)
		return v, false, err
	case src.ResourceFieldRef != nil:
		v, err := pc.resourceValue(c, src.ResourceFieldRef)
		return v, false, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := pc.clientset.CoreV1().ConfigMaps(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("configMap %s: %w", ref.Name, err)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, false, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), false, nil
		}
		if optional(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("key %q not in configMap %s", ref.Key, ref.Name)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := pc.clientset.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("secret %s: %w", ref.Name, err)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), false, nil
		}
		if optional(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("key %q not in secret %s", ref.Key, ref.Name)
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

// fieldValue implements the downward API's fieldRef paths.
func (pc *podContext) fieldValue(path string) (string, error) {
	p := pc.pod
	if k, ok := subscript(path, "metadata.labels"); ok {
		return p.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return p.Annotations[k], nil
	}
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "metadata.labels":
		return formatMap(p.Labels), nil
	case "metadata.annotations":
		return formatMap(p.Annotations), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return pc.podIP, nil
	case "status.hostIP", "status.hostIPs":
		return pc.hostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// subscript parses `prefix['key']` (the downward API's map subscript syntax).
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// formatMap renders a label/annotation map the way downward API volumes do: sorted
// key="value" lines with the value quoted.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}

// resourceValue implements resourceFieldRef: the container's limit (or request), falling
// back to the node's capacity for an unset limit as the kubelet does, divided by the
// divisor and rounded up.
func (pc *podContext) resourceValue(c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" {
		if cc := findContainer(pc.pod, ref.ContainerName); cc != nil {
			c = cc
		}
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("bad resource %q", ref.Resource)
	}
	var q resource.Quantity
	var found bool
	if kind == "limits" {
		q, found = c.Resources.Limits[v1.ResourceName(res)]
	} else {
		q, found = c.Resources.Requests[v1.ResourceName(res)]
	}
	if !found {
		cpu, mem := "4", "8Gi"
		if pc.node != nil {
			cpu, mem = pc.node.CPU, pc.node.Memory
		}
		switch {
		case res == "cpu" && kind == "limits":
			q = resource.MustParse(cpu)
		case res == "memory" && kind == "limits":
			q = resource.MustParse(mem)
		default:
			q = resource.MustParse("0")
		}
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	if res == "cpu" {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(div.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(div.Value()))), 10), nil
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
