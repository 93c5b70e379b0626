package render

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Labels and annotations of member pods. The names are CoreOS's, so pods created by
// CoreOS's operator are recognised as members.
const (
	// LabelApp is "app"; its value on every object of a cluster is AppName.
	LabelApp = "app"
	// AppName is the value of LabelApp.
	AppName = "etcd"
	// LabelCluster holds the EtcdCluster's name.
	LabelCluster = "etcd_cluster"
	// LabelNode holds a member pod's own name.
	LabelNode = "etcd_node"
	// AppOperatorPod is LabelApp's value on the pods the operator runs besides members
	// (backup and verification pods): never AppName, so no member selector, Service or
	// budget selects them, yet OwnedSelector does.
	AppOperatorPod = "etcd-operator"

	// AnnotationVersion holds the etcd version a member pod runs.
	AnnotationVersion = "etcd.version"
	// AnnotationMemberID holds the member's etcd ID in hex, once known.
	AnnotationMemberID = "etcd.database.coreos.com/member-id"
	// AnnotationRecoveryToken marks the first member's pod of a quorum-loss recovery
	// in progress with that recovery's token; the operator removes it when the
	// recovery finishes. It is what proves a recovery recorded in status is real.
	AnnotationRecoveryToken = "etcd.database.coreos.com/recovery-token"
	// AnnotationMarkerSignature is the operator's signature over that marker, the pod's
	// name and UID, the cluster's UID, the step and when it was decided
	// (internal/pinsign.MarkerFacts), written after the pod was created. Only a pod whose
	// signature verifies is taken for the operator's recovery or restore member.
	AnnotationMarkerSignature = "etcd.database.coreos.com/marker-signature"
)

// Fixed facts about member pods that other packages rely on.
const (
	// ClientPort and PeerPort are etcd's client and peer ports.
	ClientPort = v1beta2.EtcdClientPort
	PeerPort   = v1beta2.EtcdPeerPort
	// MetricsPort serves /metrics, /health, /livez and /readyz over plain HTTP on the
	// pod IP, with or without TLS on the other ports. The probes use it.
	MetricsPort = 2381
	// ContainerName is the name of the etcd container.
	ContainerName = "etcd"
	// DataVolumeName is the volume mounted at DataMountPath; a PVC or an emptyDir.
	DataVolumeName = "etcd-data"
	// DataMountPath is where the data volume is mounted; DataDir is etcd's --data-dir.
	DataMountPath = "/var/etcd"
	DataDir       = "/var/etcd/data"
	// PeerTLSDir and ServerTLSDir are where the TLS Secrets are mounted.
	PeerTLSDir   = "/etc/etcd/peer"
	ServerTLSDir = "/etc/etcd/server"

	// StateNew and StateExisting are the values of Member.InitialClusterState.
	StateNew      = "new"
	StateExisting = "existing"
)

// ClusterLabels returns the labels every object of the named cluster carries; they
// also select its member pods.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{LabelApp: AppName, LabelCluster: cluster}
}

// MemberLabels returns the operator's labels of one member pod (user labels from
// spec.pod.labels come on top of these in the rendered pod).
func MemberLabels(cluster, member string) map[string]string {
	l := ClusterLabels(cluster)
	l[LabelNode] = member
	return l
}

// ClusterSelector selects the member pods (and PVCs) of the named cluster.
func ClusterSelector(cluster string) labels.Selector {
	return labels.SelectorFromSet(ClusterLabels(cluster))
}

// OwnedSelector selects every object the operator makes and reads back through its
// cache (pods, claims, Services, PodDisruptionBudgets): LabelApp is AppName on a
// cluster's members, their claims, its Services and its budget (CoreOS's operator set
// the same label on the pods, claims and Services it made, so those are still found),
// and AppOperatorPod on backup and verification pods. The manager's informers for those
// kinds list and watch only these (controllers.ApplyCacheOptions).
func OwnedSelector() labels.Selector {
	req, err := labels.NewRequirement(LabelApp, selection.In, []string{AppName, AppOperatorPod})
	if err != nil {
		panic(err) // constant, valid input
	}
	return labels.NewSelector().Add(*req)
}

// IsReservedLabel reports whether a label key belongs to the operator: "app" and any
// key starting with "etcd_". The chart drops such keys from spec.pod.labels.
func IsReservedLabel(key string) bool {
	return key == LabelApp || strings.HasPrefix(key, "etcd_")
}

// IsReservedAnnotation reports whether an annotation key belongs to the operator. The
// chart drops such keys from spec.pod.annotations.
func IsReservedAnnotation(key string) bool {
	return key == AnnotationVersion || key == AnnotationMemberID || key == AnnotationRecoveryToken ||
		key == AnnotationMarkerSignature
}

// HeadlessServiceName is the Service giving members their DNS names: the cluster name.
func HeadlessServiceName(c *v1beta2.EtcdCluster) string { return c.Name }

// ClientServiceName is the Service clients use: <cluster>-client.
func ClientServiceName(c *v1beta2.EtcdCluster) string { return c.Name + "-client" }

// NormalizeVersion strips a leading "v" from an etcd version ("v3.6.16" -> "3.6.16").
func NormalizeVersion(v string) string { return strings.TrimPrefix(strings.TrimSpace(v), "v") }

// ClusterVersion is the cluster's desired version: spec.version without "v", or
// v1beta2.DefaultVersion when empty.
func ClusterVersion(spec v1beta2.EtcdClusterSpec) string {
	if v := NormalizeVersion(spec.Version); v != "" {
		return v
	}
	return v1beta2.DefaultVersion
}

// Image is the image of a member running the given etcd version:
// <repository or quay.io/coreos/etcd>:v<version without leading v>. An empty version
// means the cluster's version.
func Image(spec v1beta2.EtcdClusterSpec, version string) string {
	repo := spec.Repository
	if repo == "" {
		repo = v1beta2.DefaultRepository
	}
	v := NormalizeVersion(version)
	if v == "" {
		v = ClusterVersion(spec)
	}
	return repo + ":v" + v
}

// ClusterDomain is the DNS domain appended to member names: spec.pod.ClusterDomain if
// set, else defaultDomain (the operator's setting), without dots at either end. Empty
// means none: <pod>.<cluster>.<ns>.svc resolves through the pod search path in any
// cluster domain.
func ClusterDomain(c *v1beta2.EtcdCluster, defaultDomain string) string {
	d := defaultDomain
	if c.Spec.Pod != nil && c.Spec.Pod.ClusterDomain != "" {
		d = c.Spec.Pod.ClusterDomain
	}
	return strings.Trim(strings.TrimSpace(d), ".")
}

// ValidateClusterDomain refuses a spec.pod.ClusterDomain that is not a DNS name (RFC
// 1123 subdomain; a dot at either end is allowed, and ignored), as the CRDs' pattern does at admission.
// Member names under it are dialled by the operator: "x@host:port#" would point those
// connections (with the operator's client certificate) at an address of the tenant's
// choosing. Objects stored before the pattern existed are refused here.
func ValidateClusterDomain(c *v1beta2.EtcdCluster) error {
	if c.Spec.Pod == nil || c.Spec.Pod.ClusterDomain == "" {
		return nil
	}
	d := strings.TrimPrefix(strings.TrimSuffix(c.Spec.Pod.ClusterDomain, "."), ".")
	if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
		return fmt.Errorf("render: spec.pod.ClusterDomain %.80q is not a DNS name: %s", c.Spec.Pod.ClusterDomain, strings.Join(errs, "; "))
	}
	return nil
}

// MemberHost is a member's DNS name, <member>.<cluster>.<ns>.svc[.<domain>], with the
// domain chosen as by ClusterDomain.
func MemberHost(c *v1beta2.EtcdCluster, member, defaultDomain string) string {
	h := fmt.Sprintf("%s.%s.%s.svc", member, c.Name, c.Namespace)
	if d := ClusterDomain(c, defaultDomain); d != "" {
		h += "." + d
	}
	return h
}

// PeerTLS reports whether members talk to each other over TLS (a peer Secret is set).
func PeerTLS(c *v1beta2.EtcdCluster) bool { return peerSecret(c) != "" }

// ClientTLS reports whether clients talk to members over TLS (a server Secret is set);
// clients then need the operator Secret's certificate.
func ClientTLS(c *v1beta2.EtcdCluster) bool { return serverSecret(c) != "" }

func peerSecret(c *v1beta2.EtcdCluster) string {
	if t := c.Spec.TLS; t != nil && t.Static != nil && t.Static.Member != nil {
		return t.Static.Member.PeerSecret
	}
	return ""
}

func serverSecret(c *v1beta2.EtcdCluster) string {
	if t := c.Spec.TLS; t != nil && t.Static != nil && t.Static.Member != nil {
		return t.Static.Member.ServerSecret
	}
	return ""
}

func scheme(tls bool) string {
	if tls {
		return "https"
	}
	return "http"
}

// PeerURL is the peer URL a member advertises: http(s)://<member host>:2380.
func PeerURL(c *v1beta2.EtcdCluster, member, defaultDomain string) string {
	return fmt.Sprintf("%s://%s:%d", scheme(PeerTLS(c)), MemberHost(c, member, defaultDomain), PeerPort)
}

// PeerURLWithScheme is PeerURL with the scheme given ("http" or "https"), for a member
// that does not use the spec's yet (a plaintext cluster moving to TLS).
func PeerURLWithScheme(c *v1beta2.EtcdCluster, member, defaultDomain, scheme string) string {
	return fmt.Sprintf("%s://%s:%d", scheme, MemberHost(c, member, defaultDomain), PeerPort)
}

// PeerScheme is the scheme members use for peers under the spec: "https" with a peer
// Secret, "http" without.
func PeerScheme(c *v1beta2.EtcdCluster) string { return scheme(PeerTLS(c)) }

// ClientURL is the client URL a member advertises: http(s)://<member host>:2379.
func ClientURL(c *v1beta2.EtcdCluster, member, defaultDomain string) string {
	return fmt.Sprintf("%s://%s:%d", scheme(ClientTLS(c)), MemberHost(c, member, defaultDomain), ClientPort)
}

// ServiceClientURL is the URL of the client Service, http(s)://<cluster>-client.<ns>.svc[.<domain>]:2379.
func ServiceClientURL(c *v1beta2.EtcdCluster, defaultDomain string) string {
	h := fmt.Sprintf("%s.%s.svc", ClientServiceName(c), c.Namespace)
	if d := ClusterDomain(c, defaultDomain); d != "" {
		h += "." + d
	}
	return fmt.Sprintf("%s://%s:%d", scheme(ClientTLS(c)), h, ClientPort)
}

// InitialClusterEntry is a member's entry in --initial-cluster: <member>=<peer URL>.
func InitialClusterEntry(c *v1beta2.EtcdCluster, member, defaultDomain string) string {
	return member + "=" + PeerURL(c, member, defaultDomain)
}

// InitialCluster joins the entries of the named members with commas, in the order given.
func InitialCluster(c *v1beta2.EtcdCluster, members []string, defaultDomain string) string {
	entries := make([]string, len(members))
	for i, m := range members {
		entries[i] = InitialClusterEntry(c, m, defaultDomain)
	}
	return strings.Join(entries, ",")
}

// ClusterToken is the --initial-cluster-token of the cluster: <name>-<uid>, or the name
// alone if the object has no UID (not yet stored). It is stable for the life of the
// EtcdCluster, across member replacements and operator restarts, and differs between
// two clusters that reuse a name, so members of a deleted cluster (a left-over PVC)
// cannot bootstrap into a new one by accident. A restore that bootstraps a cluster from
// a snapshot must use the same token.
func ClusterToken(c *v1beta2.EtcdCluster) string {
	if c.UID == "" {
		return c.Name
	}
	return c.Name + "-" + string(c.UID)
}

// BudgetMinAvailable is the PodDisruptionBudget's minAvailable for a cluster of n
// members (voters and learners; n = max(spec.size, members listed)):
//
//   - every member, as a rule. A drain cordons the node first; the operator then moves
//     each member off it add-before-remove (a learner on another node, promoted, then
//     the old member removed and its pod deleted), so the cluster never has fewer voters
//     than it should and the drain finds nothing left to evict. A budget of a quorum
//     would let the drain evict one member of three at once, and the cluster would run
//     without redundancy until it was replaced.
//   - a quorum, when noNodeToLeaveTo (a member is on a cordoned node and no other node
//     can take a new member) and n >= 3: the member cannot move, so the drain may evict
//     it rather than wait forever; the cluster keeps its quorum and says why
//     (OffCordonedNodes, NoNodeToLeaveTo).
//   - one or two members never: losing either is an outage (the quorum of two is two).
//
// With a member already down, minAvailable counts the ready pods left, so no eviction
// is allowed until the operator has replaced it.
func BudgetMinAvailable(n int, noNodeToLeaveTo bool) int {
	if n < 1 {
		return 0
	}
	if noNodeToLeaveTo && n >= 3 {
		return n/2 + 1
	}
	return n
}
