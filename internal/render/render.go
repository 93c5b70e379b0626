// Package render turns an EtcdCluster and the members the controller decided on into
// the Kubernetes objects that run them, by rendering the embedded etcd-cluster Helm
// chart (helm-charts/etcd-cluster) in-process with Helm's template engine.
//
// The chart only describes objects; the controller decides which members exist, in
// which order they are created and when they are deleted, and sets owner references.
// Everything a user can customise about member pods (CoreOS's PodPolicy) is a chart
// value, copied from the spec field for field.
package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	helmcharts "github.com/etcd-operator/etcd-operator/helm-charts"
)

// Member is one etcd member the controller wants a pod for.
type Member struct {
	// Name is the pod name, the etcd member name (--name) and the pod's DNS host name.
	Name string
	// ID is the etcd member ID in hex; empty while unknown. It is recorded in the pod's
	// AnnotationMemberID annotation.
	ID string
	// InitialClusterState is StateNew when the member bootstraps a new cluster and
	// StateExisting when it joins a running one.
	InitialClusterState string
	// InitialCluster is --initial-cluster, "n1=http://n1.c.ns.svc:2380,...". It must
	// contain this member's own InitialClusterEntry.
	InitialCluster string
	// Version is the etcd version this member runs (a leading "v" is ignored); empty
	// means the cluster's spec.version. Members differ during a rolling upgrade.
	Version string
	// Recovery, for the first member of a quorum-loss recovery, seeds the member's data
	// from a surviving member of the old cluster and bootstraps a new cluster under its
	// own token. Nil for every other member.
	Recovery *Recovery
	// Token, for the first member of a cluster restored from a backup after total loss
	// (no Recovery), is that cluster's own --initial-cluster-token; empty means the
	// cluster's usual token.
	Token string
	// PeerScheme is the scheme the member listens for peers on and advertises, "http"
	// or "https"; empty means the spec's. It differs from the spec's only while a
	// running plaintext cluster moves to TLS: a member keeps the scheme of the peer URL
	// etcd has for it until that URL is updated.
	PeerScheme string
	// ClientPlaintext: besides TLS, the member serves (and advertises) plaintext clients
	// on the client port, so they keep working while a plaintext cluster moves to TLS.
	// Only with client TLS.
	ClientPlaintext bool
}

// peerScheme is the scheme m uses for peers.
func (m Member) peerScheme(c *v1beta2.EtcdCluster) string {
	if m.PeerScheme != "" {
		return m.PeerScheme
	}
	return PeerScheme(c)
}

// Recovery is how the first member of a recovered cluster gets its data.
type Recovery struct {
	// SourceURL is the client URL of the surviving member to copy the data from.
	SourceURL string
	// MinRevision is the source's revision when the recovery was planned; an older
	// snapshot is refused.
	MinRevision int64
	// Token is the new cluster's --initial-cluster-token, different from the old one so
	// that no old member can ever join it.
	Token string
	// Image is the operator's own image, which runs the copy step.
	Image string
}

// Input is what one rendering needs.
type Input struct {
	// Cluster is the EtcdCluster; its name, namespace, UID and spec are used.
	Cluster *v1beta2.EtcdCluster
	// ClusterDomain is the operator's default DNS domain (e.g. "cluster.local"), used
	// unless spec.pod.ClusterDomain is set; empty means none. Pass the same value to
	// PeerURL, ClientURL and InitialClusterEntry.
	ClusterDomain string
	// Members are the member pods to render, in order. May be empty: then only the
	// Services and the PodDisruptionBudget are rendered.
	Members []Member
	// Restore, if set, seeds the bootstrapping members from a backup. Only the caller
	// can vouch for it (see AnnotationRestore); the cluster's annotations are not read.
	Restore *RestoreStep
	// Budget is the PodDisruptionBudget's minAvailable (BudgetMinAvailable); 0: every
	// member of max(spec.size, len(Members)), the budget of a cluster with no cordoned
	// node in the way.
	Budget int
}

// Renderer renders the embedded chart. It is safe for concurrent use.
type Renderer struct {
	chart   *chart.Chart
	decoder runtime.Decoder
}

// templateOrder fixes the order of the returned objects: Services, then the
// PodDisruptionBudget, then PVCs and Pods in member order. Templates not listed come
// after these, by name.
var templateOrder = []string{"services.yaml", "pdb.yaml", "pvcs.yaml", "pods.yaml"}

// New parses the embedded etcd-cluster chart. Call it once and reuse the Renderer.
func New() (*Renderer, error) { return NewFromFS(helmcharts.EtcdCluster()) }

// NewFromFS parses a chart laid out like helm-charts/etcd-cluster (Chart.yaml at the
// root of fsys).
func NewFromFS(fsys fs.FS) (*Renderer, error) {
	var files []*loader.BufferedFile
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, &loader.BufferedFile{Name: p, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read chart files: %w", err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("invalid chart: %w", err)
	}
	// Strict decoding turns a misspelt field in a template into an error instead of
	// a field silently dropped from the pod.
	codecs := serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict)
	return &Renderer{chart: ch, decoder: codecs.UniversalDeserializer()}, nil
}

// Chart returns the parsed chart (read-only: it is shared by every rendering).
func (r *Renderer) Chart() *chart.Chart { return r.chart }

// Render returns the objects of a cluster: the headless Service <cluster>, the client
// Service <cluster>-client, the PodDisruptionBudget <cluster>, then for each member its
// PVC (only with spec.pod.persistentVolumeClaimSpec) and its Pod, in member order.
// Types are *corev1.Service, *policyv1.PodDisruptionBudget,
// *corev1.PersistentVolumeClaim and *corev1.Pod, with TypeMeta set and namespace set to
// the cluster's, and no owner references.
func (r *Renderer) Render(in Input) ([]client.Object, error) {
	manifests, err := r.Manifests(in)
	if err != nil {
		return nil, err
	}
	var objs []client.Object
	for _, m := range manifests {
		got, err := r.decode(m.Content)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", m.Template, err)
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// Manifest is the rendered YAML of one chart template.
type Manifest struct {
	// Template is the template's path in the chart, e.g. "templates/pods.yaml".
	Template string
	// Content is the rendered YAML, possibly several documents.
	Content string
}

// Manifests renders the chart to YAML, one entry per template that produced output,
// in the order Render returns objects. Render is usually what you want; this is for
// debugging and for showing users what the operator would create.
func (r *Renderer) Manifests(in Input) ([]Manifest, error) {
	vals, err := Values(in)
	if err != nil {
		return nil, err
	}
	rv, err := chartutil.ToRenderValues(r.chart, vals, chartutil.ReleaseOptions{
		Name:      in.Cluster.Name,
		Namespace: in.Cluster.Namespace,
		IsInstall: true,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	// Strict: a template that refers to a value that does not exist fails instead of
	// rendering an empty string.
	out, err := engine.Engine{Strict: true}.Render(r.chart, rv)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	prefix := r.chart.Name() + "/templates/"
	var names []string
	for name, content := range out {
		base := strings.TrimPrefix(name, prefix)
		if base == name || strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		names = append(names, base)
	}
	rank := func(n string) int {
		for i, o := range templateOrder {
			if o == n {
				return i
			}
		}
		return len(templateOrder)
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	ms := make([]Manifest, len(names))
	for i, n := range names {
		ms[i] = Manifest{Template: "templates/" + n, Content: out[prefix+n]}
	}
	return ms, nil
}

// decode turns a multi-document YAML stream into typed objects.
func (r *Renderer) decode(content string) ([]client.Object, error) {
	var objs []client.Object
	rd := utilyaml.NewYAMLReader(bufioReader(content))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := r.decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		switch o := obj.(type) {
		case *corev1.Pod, *corev1.Service, *corev1.PersistentVolumeClaim, *policyv1.PodDisruptionBudget:
			co := o.(client.Object)
			co.GetObjectKind().SetGroupVersionKind(*gvk)
			objs = append(objs, co)
		default:
			return nil, fmt.Errorf("unexpected kind %s in the chart", gvk)
		}
	}
}

// stripComments drops YAML comment lines, so a document holding only comments counts
// as empty.
func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// MaxDNSTimeoutSeconds is the largest spec.pod.DNSTimeoutInSecond the CRD admits (a day).
// Larger values stored before that limit existed are rendered as this one.
const MaxDNSTimeoutSeconds = 86400

var (
	versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	hexIDRE   = regexp.MustCompile(`^[0-9a-fA-F]{1,16}$`)
	sha256RE  = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// Values builds the chart values for an input (see helm-charts/etcd-cluster/values.yaml
// for their meaning), after checking the input: bad input gets an error naming the
// problem instead of a pod that crash-loops.
func Values(in Input) (map[string]interface{}, error) {
	c := in.Cluster
	if c == nil {
		return nil, errors.New("render: no cluster")
	}
	if err := ValidateCluster(c); err != nil {
		return nil, err
	}
	settings, err := Settings(c)
	if err != nil {
		return nil, err
	}
	restore, err := restoreValues(in.Restore)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	seen := map[string]bool{}
	members := make([]interface{}, 0, len(in.Members))
	for _, m := range in.Members {
		if err := checkMember(c, m, in.ClusterDomain); err != nil {
			return nil, fmt.Errorf("render: member %q: %w", m.Name, err)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("render: member %q listed twice", m.Name)
		}
		seen[m.Name] = true
		v := NormalizeVersion(m.Version)
		if v == "" {
			v = ClusterVersion(c.Spec)
		}
		recover, token, err := recoveryValues(c, m)
		if err != nil {
			return nil, fmt.Errorf("render: member %q: %w", m.Name, err)
		}
		members = append(members, map[string]interface{}{
			"name":                m.Name,
			"id":                  strings.ToLower(m.ID),
			"version":             v,
			"initialClusterState": m.InitialClusterState,
			"initialCluster":      m.InitialCluster,
			// Only bootstrapping members start from the backup; a member joining later
			// gets the data from its peers. A recovering member copies a survivor instead.
			"restore": len(restore) > 0 && m.InitialClusterState == StateNew && m.Recovery == nil,
			"recover": recover,
			"token":   token,
			// The restore init container's flags (empty without one).
			"restoreArgs": memberRestoreArgs(c, m, in.ClusterDomain, in.Restore, token),
			// The TLS transition's per-member state (see Member).
			"peerScheme":      m.peerScheme(c),
			"clientPlaintext": m.ClientPlaintext && ClientTLS(c),
		})
	}

	pod, err := toMap(c.Spec.Pod)
	if err != nil {
		return nil, fmt.Errorf("render: spec.pod: %w", err)
	}
	if c.Spec.Pod != nil && c.Spec.Pod.DNSTimeoutInSecond > MaxDNSTimeoutSeconds {
		pod["DNSTimeoutInSecond"] = MaxDNSTimeoutSeconds
	}
	var userSC *corev1.PodSecurityContext
	if c.Spec.Pod != nil {
		userSC = c.Spec.Pod.SecurityContext
	}
	podSC, err := PodSecurityContext(userSC)
	if err != nil {
		return nil, fmt.Errorf("render: spec.pod.securityContext: %w", err)
	}
	if pod["securityContext"], err = toMap(podSC); err != nil {
		return nil, fmt.Errorf("render: spec.pod.securityContext: %w", err)
	}
	containerSC, err := toMap(ContainerSecurityContext())
	if err != nil {
		return nil, fmt.Errorf("render: container securityContext: %w", err)
	}
	podKnobs, clientService, err := knobValues(c)
	if err != nil {
		return nil, err
	}
	tls, err := toMap(c.Spec.TLS)
	if err != nil {
		return nil, fmt.Errorf("render: spec.TLS: %w", err)
	}
	repo := c.Spec.Repository
	if repo == "" {
		repo = v1beta2.DefaultRepository
	}
	return map[string]interface{}{
		"cluster": map[string]interface{}{
			"name":                c.Name,
			"size":                c.Spec.Size,
			"version":             ClusterVersion(c.Spec),
			"repository":          repo,
			"domain":              ClusterDomain(c, in.ClusterDomain),
			"initialClusterToken": ClusterToken(c),
		},
		"members":                  members,
		"budget":                   map[string]interface{}{"minAvailable": budget(c, in)},
		"etcdSettingsEnv":          settingsValues(settings),
		"pod":                      pod,
		"TLS":                      tls,
		"peerAllowedHostname":      PeerAllowedHostname(c),
		"restore":                  restore,
		"containerSecurityContext": containerSC,
		"podKnobs":                 podKnobs,
		"clientService":            clientService,
	}, nil
}

// PeerAllowedHostname is a name every peer certificate of c's members must hold for a
// member to accept the peer (etcd's --peer-cert-allowed-hostname); "" when any
// certificate the peer CA signed is accepted. Set with cert-manager issuing, whose
// issuer may be shared by many clusters: another cluster's peer certificate (its
// wildcard *.<cluster>.<namespace>.svc names another cluster) is refused. The name
// matches the wildcard of c's own peer certificates (certissue.SANs).
func PeerAllowedHostname(c *v1beta2.EtcdCluster) string {
	if c.Spec.TLS == nil || c.Spec.TLS.CertManager == nil || !PeerTLS(c) {
		return ""
	}
	return fmt.Sprintf("peer.%s.%s.svc", c.Name, c.Namespace)
}

// ReservedEnv lists the environment variables the chart sets for this cluster: the pod's
// own POD_NAME, and ETCD_<FLAG> for every flag the chart passes on the command
// line, which etcd refuses to see repeated in its environment ("conflicting environment
// variable is shadowed by corresponding command-line flag"). ForbiddenEnvNames holds all
// of them and more.
func ReservedEnv(c *v1beta2.EtcdCluster) []string {
	flags := []string{
		"name", "data-dir", "listen-peer-urls", "listen-client-urls", "listen-metrics-urls",
		"initial-advertise-peer-urls", "advertise-client-urls", "initial-cluster",
		"initial-cluster-state", "initial-cluster-token",
	}
	if PeerTLS(c) {
		flags = append(flags, "peer-cert-file", "peer-key-file", "peer-trusted-ca-file", "peer-client-cert-auth")
	}
	if PeerAllowedHostname(c) != "" {
		flags = append(flags, "peer-cert-allowed-hostname")
	}
	if ClientTLS(c) {
		flags = append(flags, "cert-file", "key-file", "trusted-ca-file", "client-cert-auth")
	}
	out := append([]string{}, ownEnv...)
	for _, f := range flags {
		out = append(out, "ETCD_"+strings.ToUpper(strings.ReplaceAll(f, "-", "_")))
	}
	return out
}

// ValidateCluster reports what Render would refuse about the cluster itself (name,
// namespace, version, spec.pod.etcdEnv), so an admission webhook or a status condition
// can say it before any member exists.
func ValidateCluster(c *v1beta2.EtcdCluster) error {
	if c == nil {
		return errors.New("render: no cluster")
	}
	if c.Namespace == "" {
		return fmt.Errorf("render: cluster %q has no namespace", c.Name)
	}
	// The name is the headless Service's name and a DNS label of every member name;
	// <name>-client must be a Service name too.
	if errs := validation.IsDNS1035Label(c.Name); len(errs) > 0 {
		return fmt.Errorf("render: cluster name %q: %s", c.Name, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1035Label(ClientServiceName(c)); len(errs) > 0 {
		return fmt.Errorf("render: client service name %q: %s", ClientServiceName(c), strings.Join(errs, "; "))
	}
	if v := NormalizeVersion(c.Spec.Version); v != "" && !versionRE.MatchString(v) {
		return fmt.Errorf("render: spec.version %q is not a version like 3.6.16", c.Spec.Version)
	}
	if err := validateEnv(c); err != nil {
		return err
	}
	if err := ValidateClusterDomain(c); err != nil {
		return err
	}
	if _, _, err := knobValues(c); err != nil {
		return err
	}
	_, err := Settings(c)
	return err
}

func checkMember(c *v1beta2.EtcdCluster, m Member, domain string) error {
	if errs := validation.IsDNS1123Label(m.Name); len(errs) > 0 {
		return fmt.Errorf("name: %s", strings.Join(errs, "; "))
	}
	if m.ID != "" && !hexIDRE.MatchString(m.ID) {
		return fmt.Errorf("ID %q is not a hex member ID", m.ID)
	}
	if v := NormalizeVersion(m.Version); v != "" && !versionRE.MatchString(v) {
		return fmt.Errorf("version %q is not a version like 3.6.16", m.Version)
	}
	if m.InitialClusterState != StateNew && m.InitialClusterState != StateExisting {
		return fmt.Errorf("initial cluster state %q is neither %q nor %q", m.InitialClusterState, StateNew, StateExisting)
	}
	// etcd exits when its own advertised peer URL is not its entry in
	// --initial-cluster; catch that here rather than in a crash-looping pod.
	if m.PeerScheme != "" && m.PeerScheme != "http" && m.PeerScheme != "https" {
		return fmt.Errorf("peer scheme %q is neither http nor https", m.PeerScheme)
	}
	self := m.Name + "=" + PeerURLWithScheme(c, m.Name, domain, m.peerScheme(c))
	for _, e := range strings.Split(m.InitialCluster, ",") {
		if strings.TrimSpace(e) == self {
			return nil
		}
	}
	return fmt.Errorf("initial cluster %q does not contain the member's own entry %q", m.InitialCluster, self)
}

// toMap turns an API struct into chart values through its JSON form, so values carry
// the API's JSON field names and every field of the struct without listing them.
func toMap(v interface{}) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return out, nil
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// budget is the minAvailable the chart's pdb.yaml renders: the caller's, or every
// member's when the caller has none to give.
func budget(c *v1beta2.EtcdCluster, in Input) int {
	if in.Budget > 0 {
		return in.Budget
	}
	return BudgetMinAvailable(max(c.Spec.Size, len(in.Members)), false)
}
