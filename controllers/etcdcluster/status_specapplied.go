package etcdcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// AnnotationSpecFingerprint on a member pod records the spec it was created from: for
// each field in fingerprintedFields, a short hash of its value (fields with an empty
// value are left out). Comparing it with the current spec tells which pods a rolling
// reconfiguration still has to move onto it (act_reconfigure.go), and which changes reach
// new members only.
const AnnotationSpecFingerprint = "etcd.database.coreos.com/spec-fingerprint"

// Spec fields a member pod can be compared on directly, whatever created it.
const (
	fieldRepository   = "repository"
	fieldPeerSecret   = "TLS.static.member.peerSecret"
	fieldServerSecret = "TLS.static.member.serverSecret"
	fieldClaimSpec    = "pod.persistentVolumeClaimSpec"
	fieldLabels       = "pod.labels"
	fieldAnnotations  = "pod.annotations"
	fieldNodeSelector = "pod.nodeSelector"
)

// fingerprintedFields are the pod policy fields the chart renders into a pod only when
// it is created, in spec order, with how to read each. spec.version and spec.size are
// not among them: upgrades and scaling apply those. busyboxImage is ignored by the chart.
var fingerprintedFields = []struct {
	name  string
	value func(p *etcdv1beta2.PodPolicy) any
}{
	{fieldLabels, func(p *etcdv1beta2.PodPolicy) any { return p.Labels }},
	{fieldNodeSelector, func(p *etcdv1beta2.PodPolicy) any { return p.NodeSelector }},
	{"pod.antiAffinity", func(p *etcdv1beta2.PodPolicy) any { return p.AntiAffinity }},
	{"pod.affinity", func(p *etcdv1beta2.PodPolicy) any { return p.Affinity }},
	{"pod.resources", func(p *etcdv1beta2.PodPolicy) any { return p.Resources }},
	{"pod.tolerations", func(p *etcdv1beta2.PodPolicy) any { return p.Tolerations }},
	{"pod.etcdEnv", func(p *etcdv1beta2.PodPolicy) any { return p.EtcdEnv }},
	{fieldClaimSpec, func(p *etcdv1beta2.PodPolicy) any { return p.PersistentVolumeClaimSpec }},
	{fieldAnnotations, func(p *etcdv1beta2.PodPolicy) any { return p.Annotations }},
	{"pod.securityContext", func(p *etcdv1beta2.PodPolicy) any { return p.SecurityContext }},
	{"pod.DNSTimeoutInSecond", func(p *etcdv1beta2.PodPolicy) any { return p.DNSTimeoutInSecond }},
}

// fieldClusterDomain is fingerprinted with the effective domain (the spec's, else the
// operator's): it is part of every member's peer URL.
const fieldClusterDomain = "pod.ClusterDomain"

// settingsFields are the typed etcd settings, fingerprinted by their annotation (v1's
// spec.etcd is stored as these): the chart renders them into a pod's environment only
// when it is created, so a change rolls out through new pods (act_reconfigure.go).
var settingsFields = []string{
	etcdv1beta2.QuotaBackendBytesAnnotation,
	etcdv1beta2.AutoCompactionModeAnnotation,
	etcdv1beta2.AutoCompactionRetentionAnnotation,
}

// specFingerprint hashes the current value of every fingerprinted field.
func specFingerprint(c *etcdv1beta2.EtcdCluster, domain string) map[string]string {
	pod := c.Spec.Pod
	if pod == nil {
		pod = &etcdv1beta2.PodPolicy{}
	}
	out := map[string]string{}
	for _, f := range fingerprintedFields {
		if h := hashValue(f.value(pod)); h != "" {
			out[f.name] = h
		}
	}
	if h := hashValue(render.ClusterDomain(c, domain)); h != "" {
		out[fieldClusterDomain] = h
	}
	if h := hashValue(claimSpecApartFromStorage(pod.PersistentVolumeClaimSpec)); h != "" {
		out[keyClaimSpecApartFromStorage] = h
	}
	for _, key := range settingsFields {
		if h := hashValue(c.Annotations[key]); h != "" {
			out[key] = h
		}
	}
	podKnobFingerprint(c, out) // status_specapplied_knobs.go
	return out
}

// hashValue is a short hash of v's JSON, or "" for an empty value (nil, {}, [], "", 0,
// false), so that an unset field and an emptied one compare equal.
func hashValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unhashable"
	}
	switch string(b) {
	case "null", "{}", "[]", `""`, "0", "false":
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// stampSpecFingerprint records on a pod about to be created what it is created from.
func stampSpecFingerprint(p *corev1.Pod, c *etcdv1beta2.EtcdCluster, domain string) {
	b, err := json.Marshal(specFingerprint(c, domain))
	if err != nil {
		return
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[AnnotationSpecFingerprint] = string(b)
}

// staleSpecFields lists, in spec order, the fields whose current value differs from the
// one pod p was created from (or, for the repository, last upgraded to). Pods without a
// fingerprint (created by an older operator) are compared on what the pod itself shows:
// repository, TLS secrets, claim or not, and whether the spec's labels, annotations and
// node selector are on it; other fields of such pods cannot be judged and are not reported.
//
// claimCreatedWith is the storage request the pod's claim was created with ("" if not
// known): the storage request itself is applied to running members by expanding their
// claims (act_storage_decide.go), so only the rest of the claim spec is compared here.
func staleSpecFields(c *etcdv1beta2.EtcdCluster, domain string, p *corev1.Pod, claimCreatedWith string) []string {
	var stale []string
	if repo, ok := podRepository(p); ok && repo != specRepository(c) {
		stale = append(stale, fieldRepository)
	}
	if render.PodSecretVolume(p, volumePeerTLS) != specPeerSecret(c) {
		stale = append(stale, fieldPeerSecret)
	}
	if render.PodSecretVolume(p, volumeServerTLS) != specServerSecret(c) {
		stale = append(stale, fieldServerSecret)
	}
	var recorded map[string]string
	if raw, ok := p.Annotations[AnnotationSpecFingerprint]; !ok || json.Unmarshal([]byte(raw), &recorded) != nil {
		if madeByCoreOS(p) { // observe_coreos.go
			stale = append(stale, fieldCoreOSPodShape)
		}
		return append(stale, staleByInspection(c, p)...)
	}
	current := specFingerprint(c, domain)
	for _, f := range fingerprintedFields {
		if f.name == fieldClaimSpec {
			if claimSpecStale(c, current, recorded, claimCreatedWith) {
				stale = append(stale, f.name)
			}
			continue
		}
		if current[f.name] != recorded[f.name] {
			stale = append(stale, f.name)
		}
	}
	if current[fieldClusterDomain] != recorded[fieldClusterDomain] {
		stale = append(stale, fieldClusterDomain)
	}
	for _, key := range settingsFields {
		if current[key] != recorded[key] {
			stale = append(stale, key)
		}
	}
	for _, f := range podKnobFields {
		if current[f.name] != recorded[f.name] {
			stale = append(stale, f.name)
		}
	}
	return stale
}

// staleByInspection compares a pod without a fingerprint on fields it shows reliably.
// Labels and annotations others may add (admission webhooks do) are no change; only the
// spec's own entries are checked.
func staleByInspection(c *etcdv1beta2.EtcdCluster, p *corev1.Pod) []string {
	pod := c.Spec.Pod
	if pod == nil {
		pod = &etcdv1beta2.PodPolicy{}
	}
	var stale []string
	if !containsAll(p.Labels, pod.Labels, render.IsReservedLabel) {
		stale = append(stale, fieldLabels)
	}
	if len(p.Spec.NodeSelector)+len(pod.NodeSelector) > 0 && !maps.Equal(p.Spec.NodeSelector, pod.NodeSelector) {
		stale = append(stale, fieldNodeSelector)
	}
	if (pod.PersistentVolumeClaimSpec != nil) != podHasClaim(p) {
		stale = append(stale, fieldClaimSpec)
	}
	if !containsAll(p.Annotations, pod.Annotations, render.IsReservedAnnotation) {
		stale = append(stale, fieldAnnotations)
	}
	return stale
}

// containsAll: every entry of want whose key is not reserved is in have.
func containsAll(have, want map[string]string, reserved func(string) bool) bool {
	for k, v := range want {
		if reserved(k) {
			continue
		}
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// podRepository is the repository of the etcd container's image: the image without its
// ":v<version>" tag (a registry port, "host:5000/etcd", is not a tag).
func podRepository(p *corev1.Pod) (string, bool) {
	for _, ctr := range p.Spec.Containers {
		if ctr.Name != render.ContainerName {
			continue
		}
		img := ctr.Image
		if i := strings.LastIndex(img, ":"); i > 0 && !strings.Contains(img[i:], "/") {
			img = img[:i]
		}
		return img, true
	}
	return "", false
}

func specRepository(c *etcdv1beta2.EtcdCluster) string {
	if c.Spec.Repository == "" {
		return etcdv1beta2.DefaultRepository
	}
	return c.Spec.Repository
}

func specPeerSecret(c *etcdv1beta2.EtcdCluster) string {
	if t := c.Spec.TLS; t != nil && t.Static != nil && t.Static.Member != nil {
		return t.Static.Member.PeerSecret
	}
	return ""
}

func specServerSecret(c *etcdv1beta2.EtcdCluster) string {
	if t := c.Spec.TLS; t != nil && t.Static != nil && t.Static.Member != nil {
		return t.Static.Member.ServerSecret
	}
	return ""
}

// The chart's volumes of the member TLS Secrets.
const (
	volumePeerTLS   = "member-peer-tls"
	volumeServerTLS = render.ServerTLSVolume
)

func podHasClaim(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Name == render.DataVolumeName {
			return v.PersistentVolumeClaim != nil
		}
	}
	return false
}

// specAppliedReport is the SpecApplied condition: which fields running members were
// created with differently, and which members.
type specAppliedReport struct {
	Status          bool
	Reason, Message string
	EventKey        string
}

// storage is the storage step's finding about the members' claims (nil: not judged); its
// parts follow the pods' fields in the message, and its reason wins when it is
// ExpansionNotAllowed, or when no pod field is stale.
func specApplied(c *etcdv1beta2.EtcdCluster, domain string, pods map[string]*corev1.Pod, storage *storageReport) specAppliedReport {
	podsOf := map[string][]string{}
	var order []string
	names := make([]string, 0, len(pods))
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := pods[n]
		if p.DeletionTimestamp != nil {
			continue
		}
		createdWith := ""
		if storage != nil {
			createdWith = storage.CreatedWith[n] // a member's claim is named like its pod
		}
		for _, f := range staleSpecFields(c, domain, p, createdWith) {
			if _, seen := podsOf[f]; !seen {
				order = append(order, f)
			}
			podsOf[f] = append(podsOf[f], n)
		}
	}
	if len(order) == 0 && (storage == nil || storage.Settled) {
		return specAppliedReport{Status: true, Reason: etcdv1beta2.ReasonSpecApplied,
			Message: "every member pod was created from the current spec", EventKey: etcdv1beta2.ReasonSpecApplied}
	}
	// Spec order, whatever order the pods revealed them in.
	rank := map[string]int{fieldCoreOSPodShape: -1, fieldRepository: 0, fieldPeerSecret: 1, fieldServerSecret: 2}
	for i, f := range fingerprintedFields {
		rank[f.name] = 3 + i
	}
	rank[fieldClusterDomain] = 3 + len(fingerprintedFields)
	for i, key := range settingsFields {
		rank[key] = 4 + len(fingerprintedFields) + i
	}
	for i, f := range podKnobFields {
		rank[f.name] = 4 + len(fingerprintedFields) + len(settingsFields) + i
	}
	sort.SliceStable(order, func(i, j int) bool { return rank[order[i]] < rank[order[j]] })
	rolled, kept := splitRolledOut(order)
	parts := make([]string, 0, len(kept))
	for _, f := range kept {
		parts = append(parts, fmt.Sprintf("%s (%s)", f, strings.Join(podsOf[f], ", ")))
	}
	if len(rolled) > 0 {
		return rollingOut(c, domain, pods, rolled, kept, parts, storage)
	}
	if storage != nil && !storage.Settled {
		return withStorage(order, parts, *storage)
	}
	return specAppliedReport{
		Reason: etcdv1beta2.ReasonAppliesToNewMembersOnly,
		Message: cut("changed after these members were created; running members keep what they were created with "+
			"and are not restarted, the change applies to members created from now on: "+strings.Join(parts, "; "), maxHealthMessage),
		EventKey: strings.Join(order, ","),
	}
}

// reportSpecApplied sets SpecApplied (specAppliedConditionOf).
func (r *Reconciler) reportSpecApplied(c *etcdv1beta2.EtcdCluster, o *observation, now string) {
	r.setCondition(c, specAppliedConditionOf(c, r.ClusterDomain, o), now)
}

// specAppliedConditionOf is SpecApplied: whether the member pods run the current spec
// (specApplied), or a refused TLS change, or the step of turning TLS on that runs; one
// event per new set of unapplied fields.
func specAppliedConditionOf(c *etcdv1beta2.EtcdCluster, domain string, o *observation) conditionUpdate {
	s := specApplied(c, domain, o.pods, o.claimReport)
	if msg := o.tlsRefusal; msg != "" && !s.Status {
		s = specAppliedReport{Reason: etcdv1beta2.ReasonTLSChangeRefused, Message: cut(msg, maxHealthMessage), EventKey: etcdv1beta2.ReasonTLSChangeRefused + ":" + msg}
	} else if msg := o.tlsProgress; msg != "" {
		// Turning TLS on: after its first step the pods mount the spec's Secrets, but
		// the members are not on TLS until the last step is through.
		s = specAppliedReport{Reason: etcdv1beta2.ReasonRollingOut, Message: cut(msg, maxHealthMessage)}
	}
	u := conditionUpdate{Type: etcdv1beta2.ClusterConditionSpecApplied, Status: s.Status, Reason: s.Reason, Message: s.Message, Recovered: s.Status}
	if !s.Status {
		u.Fail = s.EventKey
	}
	return u
}
