package promtest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// PodMonitor is the part of monitoring.coreos.com/v1 PodMonitor the shipped monitors
// use. Decoding is strict (DecodePodMonitor), so a field added to a shipped monitor that
// the generator does not translate fails the tests instead of being ignored.
type PodMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace,omitempty"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec struct {
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		Selector struct {
			MatchLabels      map[string]string `json:"matchLabels,omitempty"`
			MatchExpressions []struct {
				Key      string   `json:"key"`
				Operator string   `json:"operator"`
				Values   []string `json:"values,omitempty"`
			} `json:"matchExpressions,omitempty"`
		} `json:"selector"`
		PodMetricsEndpoints []Endpoint `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// Endpoint is one podMetricsEndpoints entry.
type Endpoint struct {
	Port        string `json:"port"`
	Path        string `json:"path,omitempty"`
	HonorLabels bool   `json:"honorLabels,omitempty"`
	Scheme      string `json:"scheme,omitempty"`
	TLSConfig   *struct {
		InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
	} `json:"tlsConfig,omitempty"`
	Authorization *struct {
		Type        string `json:"type,omitempty"`
		Credentials struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		} `json:"credentials"`
	} `json:"authorization,omitempty"`
	Relabelings []Relabeling `json:"relabelings,omitempty"`
}

// Relabeling is a PodMonitor relabeling (camelCase fields of the CRD).
type Relabeling struct {
	SourceLabels []string `json:"sourceLabels,omitempty"`
	Separator    string   `json:"separator,omitempty"`
	TargetLabel  string   `json:"targetLabel,omitempty"`
	Replacement  *string  `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
	Regex        string   `json:"regex,omitempty"`
}

// DecodePodMonitor decodes one PodMonitor strictly.
func DecodePodMonitor(data []byte) (PodMonitor, error) {
	var m PodMonitor
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return m, err
	}
	if m.APIVersion != "monitoring.coreos.com/v1" || m.Kind != "PodMonitor" {
		return m, fmt.Errorf("a %s %s, not a monitoring.coreos.com/v1 PodMonitor", m.APIVersion, m.Kind)
	}
	if m.Metadata.Namespace == "" {
		return m, fmt.Errorf("PodMonitor %s has no namespace (take it from kustomize build, which sets it)", m.Metadata.Name)
	}
	return m, nil
}

// ScrapeConfig is one Prometheus scrape_configs entry (the fields generated here).
type ScrapeConfig struct {
	JobName             string          `json:"job_name"`
	HonorLabels         bool            `json:"honor_labels"`
	ScrapeInterval      string          `json:"scrape_interval,omitempty"`
	MetricsPath         string          `json:"metrics_path"`
	Scheme              string          `json:"scheme"`
	TLSConfig           *TLSConfig      `json:"tls_config,omitempty"`
	Authorization       *Authorization  `json:"authorization,omitempty"`
	KubernetesSDConfigs []KubernetesSD  `json:"kubernetes_sd_configs"`
	RelabelConfigs      []RelabelConfig `json:"relabel_configs"`
}

// TLSConfig of a scrape.
type TLSConfig struct {
	InsecureSkipVerify bool `json:"insecure_skip_verify"`
}

// Authorization of a scrape: the credentials are the Secret's value, as the Prometheus
// Operator writes them into the configuration it generates.
type Authorization struct {
	Type        string `json:"type"`
	Credentials string `json:"credentials"`
}

// KubernetesSD is a kubernetes_sd_configs entry of role pod.
type KubernetesSD struct {
	Role           string `json:"role"`
	KubeconfigFile string `json:"kubeconfig_file,omitempty"`
	Namespaces     *struct {
		Names []string `json:"names"`
	} `json:"namespaces,omitempty"`
}

// RelabelConfig is a Prometheus relabel_configs entry.
type RelabelConfig struct {
	SourceLabels []string `json:"source_labels,omitempty"`
	Separator    string   `json:"separator,omitempty"`
	TargetLabel  string   `json:"target_label,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	Replacement  *string  `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
}

// ScrapeOptions are what a PodMonitor leaves to the Prometheus that selects it.
type ScrapeOptions struct {
	// KubeconfigFile lets service discovery reach the API server (the bench's Prometheus
	// runs outside the cluster; in-cluster it would use its ServiceAccount).
	KubeconfigFile string
	// ScrapeInterval of every job ("" keeps Prometheus' global one).
	ScrapeInterval string
	// Secret returns the value of key in Secret namespace/name (the authorization
	// credentials the Prometheus Operator would read).
	Secret func(namespace, name, key string) (string, error)
}

var invalidLabelChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// sdLabel is the name Kubernetes service discovery gives a pod label's meta label.
func sdLabel(prefix, k string) string {
	return prefix + invalidLabelChars.ReplaceAllString(k, "_")
}

func str(s string) *string { return &s }

// ScrapeConfigs translates PodMonitors into scrape configurations the way the Prometheus
// Operator does: one job per endpoint named podMonitor/<namespace>/<name>/<index>,
// Kubernetes pod discovery in the selected namespaces, relabelings that keep the pods the
// selector matches and the container port of the endpoint's name, drop finished pods, set
// namespace/pod/container/endpoint and job=<namespace>/<name>, then the monitor's own
// relabelings.
func ScrapeConfigs(monitors []PodMonitor, o ScrapeOptions) ([]ScrapeConfig, error) {
	var out []ScrapeConfig
	for _, m := range monitors {
		ns, name := m.Metadata.Namespace, m.Metadata.Name
		sd := KubernetesSD{Role: "pod", KubeconfigFile: o.KubeconfigFile}
		switch sel := m.Spec.NamespaceSelector; {
		case sel != nil && sel.Any:
		case sel != nil && len(sel.MatchNames) > 0:
			sd.Namespaces = &struct {
				Names []string `json:"names"`
			}{Names: sel.MatchNames}
		default:
			sd.Namespaces = &struct {
				Names []string `json:"names"`
			}{Names: []string{ns}}
		}
		var selectRelabel []RelabelConfig
		keys := make([]string, 0, len(m.Spec.Selector.MatchLabels))
		for k := range m.Spec.Selector.MatchLabels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			selectRelabel = append(selectRelabel, RelabelConfig{Action: "keep",
				SourceLabels: []string{sdLabel("__meta_kubernetes_pod_label_", k), sdLabel("__meta_kubernetes_pod_labelpresent_", k)},
				Regex:        "(" + regexp.QuoteMeta(m.Spec.Selector.MatchLabels[k]) + ");true"})
		}
		for _, e := range m.Spec.Selector.MatchExpressions {
			both := []string{sdLabel("__meta_kubernetes_pod_label_", e.Key), sdLabel("__meta_kubernetes_pod_labelpresent_", e.Key)}
			quoted := make([]string, len(e.Values))
			for i, v := range e.Values {
				quoted[i] = regexp.QuoteMeta(v)
			}
			switch e.Operator {
			case "Exists":
				selectRelabel = append(selectRelabel, RelabelConfig{Action: "keep", SourceLabels: both[1:], Regex: "true"})
			case "DoesNotExist":
				selectRelabel = append(selectRelabel, RelabelConfig{Action: "drop", SourceLabels: both[1:], Regex: "true"})
			case "In":
				selectRelabel = append(selectRelabel, RelabelConfig{Action: "keep", SourceLabels: both, Regex: "(" + strings.Join(quoted, "|") + ");true"})
			case "NotIn":
				selectRelabel = append(selectRelabel, RelabelConfig{Action: "drop", SourceLabels: both, Regex: "(" + strings.Join(quoted, "|") + ");true"})
			default:
				return nil, fmt.Errorf("PodMonitor %s/%s: selector operator %q", ns, name, e.Operator)
			}
		}
		for i, ep := range m.Spec.PodMetricsEndpoints {
			if ep.Port == "" {
				return nil, fmt.Errorf("PodMonitor %s/%s endpoint %d: only named ports are translated", ns, name, i)
			}
			sc := ScrapeConfig{
				JobName:             fmt.Sprintf("podMonitor/%s/%s/%d", ns, name, i),
				HonorLabels:         ep.HonorLabels,
				ScrapeInterval:      o.ScrapeInterval,
				MetricsPath:         ep.Path,
				Scheme:              ep.Scheme,
				KubernetesSDConfigs: []KubernetesSD{sd},
			}
			if sc.MetricsPath == "" {
				sc.MetricsPath = "/metrics"
			}
			if sc.Scheme == "" {
				sc.Scheme = "http"
			}
			if ep.TLSConfig != nil {
				sc.TLSConfig = &TLSConfig{InsecureSkipVerify: ep.TLSConfig.InsecureSkipVerify}
			}
			if a := ep.Authorization; a != nil {
				if o.Secret == nil {
					return nil, fmt.Errorf("PodMonitor %s/%s: authorization needs ScrapeOptions.Secret", ns, name)
				}
				v, err := o.Secret(ns, a.Credentials.Name, a.Credentials.Key)
				if err != nil {
					return nil, fmt.Errorf("PodMonitor %s/%s: credentials: %w", ns, name, err)
				}
				typ := a.Type
				if typ == "" {
					typ = "Bearer"
				}
				sc.Authorization = &Authorization{Type: typ, Credentials: v}
			}
			rc := append([]RelabelConfig{}, selectRelabel...)
			rc = append(rc,
				RelabelConfig{Action: "keep", SourceLabels: []string{"__meta_kubernetes_pod_container_port_name"}, Regex: regexp.QuoteMeta(ep.Port)},
				RelabelConfig{Action: "drop", SourceLabels: []string{"__meta_kubernetes_pod_phase"}, Regex: "(Failed|Succeeded)"},
				RelabelConfig{SourceLabels: []string{"__meta_kubernetes_namespace"}, TargetLabel: "namespace"},
				RelabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_container_name"}, TargetLabel: "container"},
				RelabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_name"}, TargetLabel: "pod"},
				RelabelConfig{TargetLabel: "job", Replacement: str(ns + "/" + name)},
				RelabelConfig{TargetLabel: "endpoint", Replacement: str(ep.Port)},
			)
			for _, r := range ep.Relabelings {
				rc = append(rc, RelabelConfig{SourceLabels: r.SourceLabels, Separator: r.Separator,
					TargetLabel: r.TargetLabel, Regex: r.Regex, Replacement: r.Replacement, Action: strings.ToLower(r.Action)})
			}
			sc.RelabelConfigs = rc
			out = append(out, sc)
		}
	}
	return out, nil
}

// Config is a Prometheus configuration file with the given scrape configs, evaluating
// rules from ruleFiles every interval (also the global scrape interval).
func Config(scrapes []ScrapeConfig, ruleFiles []string, interval string) ([]byte, error) {
	return yaml.Marshal(map[string]any{
		"global": map[string]any{
			"scrape_interval":     interval,
			"scrape_timeout":      interval,
			"evaluation_interval": interval,
		},
		"rule_files":     ruleFiles,
		"scrape_configs": scrapes,
	})
}
