package etcdcluster

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// New member pods while a change is refused or held, the controller's part (the when
// is the planner's, planner/asrunning.go): a CreatePod or AddLearner that says AsRunning
// renders its pod with the TLS Secrets and the cluster domain the running members use,
// read off their pods, instead of the spec's. A member pod's volumes and arguments are
// immutable and the operator wrote them, so they say what the member runs; status and
// annotations, which a tenant can edit, are not read.
//
// With no member pod left to read from (every pod of the cluster gone at once), the pod
// is rendered from the spec, as without a hold: nothing runs that it could differ from,
// and the pods recreated after it read their settings off it, so the members come back
// on one set of settings. (A scheme change refused before such a loss is then taken up
// by all of them together; their peer URLs in etcd keep the old scheme, which only a
// member's data records, and no pod is left to read it off.)

// podBase is what a new member pod is rendered from: a cluster, the spec's or a copy
// with the running members' TLS Secrets and cluster domain, and the default domain that
// goes with it (render.Input.ClusterDomain).
type podBase struct {
	cluster *etcdv1beta2.EtcdCluster
	domain  string
}

func (r *Reconciler) specBase(c *etcdv1beta2.EtcdCluster) podBase {
	return podBase{cluster: c, domain: r.ClusterDomain}
}

// baseFor is what the pod action a creates is rendered from.
func (r *Reconciler) baseFor(c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) podBase {
	if !a.AsRunning {
		return r.specBase(c)
	}
	run, ok := runningSettingsOf(c, o.pods)
	if !ok {
		return r.specBase(c)
	}
	return run.base(c, r.ClusterDomain)
}

// note says, for the event of a pod created from b, when b is not c's spec.
func (b podBase) note(c *etcdv1beta2.EtcdCluster) string {
	if b.cluster == c {
		return ""
	}
	return "; on the TLS Secrets and cluster domain the running members use, not the spec's refused or held change"
}

// runningSettings are the settings a new pod takes from the running members.
type runningSettings struct {
	peerSecret, serverSecret string
	// domain is the cluster domain their peer URLs are under ("" for none), when known.
	domain      string
	domainKnown bool
}

// runningSettingsOf reads what the cluster's member pods run on: the TLS Secrets most
// of them mount and the cluster domain most of them advertise, ties broken by name so
// that every reconcile picks the same. Pods being deleted count only when no other pod
// is left (their members ran on them until now). False when there is no pod at all.
func runningSettingsOf(c *etcdv1beta2.EtcdCluster, pods map[string]*corev1.Pod) (runningSettings, bool) {
	var live []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		for _, p := range pods {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return runningSettings{}, false
	}
	tlsVotes, domainVotes := map[string]int{}, map[string]int{}
	for _, p := range live {
		tlsVotes[render.PodSecretVolume(p, volumePeerTLS)+"\x00"+render.PodSecretVolume(p, volumeServerTLS)]++
		if d, ok := podDomain(c, p); ok {
			domainVotes[d]++
		}
	}
	var run runningSettings
	peer, server, _ := strings.Cut(mostVoted(tlsVotes), "\x00")
	run.peerSecret, run.serverSecret = peer, server
	if len(domainVotes) > 0 {
		run.domain, run.domainKnown = mostVoted(domainVotes), true
	}
	return run, true
}

// mostVoted is the key with the most votes, the smallest such key on a tie.
func mostVoted(votes map[string]int) string {
	keys := make([]string, 0, len(votes))
	for k := range votes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	best := keys[0]
	for _, k := range keys[1:] {
		if votes[k] > votes[best] {
			best = k
		}
	}
	return best
}

// podDomain is the cluster domain of the peer URL pod p advertises,
// <pod>.<cluster>.<namespace>.svc[.<domain>] as the chart (and CoreOS) writes it.
func podDomain(c *etcdv1beta2.EtcdCluster, p *corev1.Pod) (string, bool) {
	v := podArg(p, "initial-advertise-peer-urls") // act_tlsenable.go
	if v == "" {
		return "", false
	}
	u, err := url.Parse(strings.TrimSpace(strings.Split(v, ",")[0]))
	if err != nil {
		return "", false
	}
	host := strings.TrimSuffix(u.Hostname(), ".")
	svc := fmt.Sprintf("%s.%s.%s.svc", p.Name, c.Name, c.Namespace)
	if host == svc {
		return "", true
	}
	if d, ok := strings.CutPrefix(host, svc+"."); ok && d != "" {
		return d, true
	}
	return "", false
}

// base is a copy of c that differs from it only in the running settings, and the
// default domain that goes with it. The spec's operatorSecret stays: it is the
// operator's client certificate, not the members'.
func (run runningSettings) base(c *etcdv1beta2.EtcdCluster, defaultDomain string) podBase {
	cp := c.DeepCopy()
	switch {
	case run.peerSecret == "" && run.serverSecret == "":
		if cp.Spec.TLS != nil && cp.Spec.TLS.Static != nil {
			cp.Spec.TLS.Static.Member = nil
		}
	default:
		if cp.Spec.TLS == nil {
			cp.Spec.TLS = &etcdv1beta2.TLSPolicy{}
		}
		if cp.Spec.TLS.Static == nil {
			cp.Spec.TLS.Static = &etcdv1beta2.StaticTLS{}
		}
		cp.Spec.TLS.Static.Member = &etcdv1beta2.MemberSecret{PeerSecret: run.peerSecret, ServerSecret: run.serverSecret}
	}
	if !run.domainKnown {
		return podBase{cluster: cp, domain: defaultDomain}
	}
	// The running domain replaces the spec's and the operator's alike.
	if cp.Spec.Pod != nil {
		cp.Spec.Pod.ClusterDomain = ""
	}
	return podBase{cluster: cp, domain: run.domain}
}
