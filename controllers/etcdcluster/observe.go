package etcdcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// observation is one reconcile's view of a cluster: its pods from the API and its
// members from etcd, joined, plus an etcd admin client for acting on it.
type observation struct {
	// status writes the cluster's status; act checkpoints it before a step whose effect
	// must survive a restart.
	status    *statusWriter
	planner   planner.Observed
	clusterID uint64                 // from the leader's (else any member's) status; 0 if none answered
	pods      map[string]*corev1.Pod // by name
	// warnings are the kubelet's set-up warnings of the pods it is still setting up.
	warnings map[string]*kubeletWarning
	members  []etcdadmin.Member // nil when no endpoint answered
	admin    *etcdadmin.Admin   // nil when no pod has an IP yet
	leaderEP string             // client endpoint of the leader, if known
}

func (o *observation) close() {
	if o.admin != nil {
		_ = o.admin.Close()
	}
}

func (r *Reconciler) observe(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*observation, error) {
	lg := log.FromContext(ctx)
	now := r.Now()
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}.String()
	o := &observation{pods: map[string]*corev1.Pod{}}
	o.planner = planner.Observed{
		Now:              now,
		Bootstrapped:     c.Status.Bootstrapped,
		BootstrapMembers: c.Status.BootstrapMembers,
		NameSeed:         string(c.UID),
	}
	if p := c.Status.PendingMember; p != nil {
		if id, err := etcdadmin.ParseID(p.ID); err == nil {
			o.planner.Pending = &planner.PendingMember{Name: p.Name, ID: id, AddedAt: p.AddedAt.Time}
		}
	}
	if rec := c.Status.Recovery; rec != nil {
		id, _ := etcdadmin.ParseID(rec.SourceID)
		o.planner.Recovery = &planner.Recovery{Source: rec.Source, SourceID: id, Revision: rec.Revision,
			Member: rec.Member, StartedAt: rec.StartedAt.Time, Token: rec.Token}
		o.planner.Pending = nil
	}

	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace),
		client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}); err != nil {
		return nil, fmt.Errorf("list member pods: %w", err)
	}
	if c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil {
		var claims corev1.PersistentVolumeClaimList
		if err := r.List(ctx, &claims, client.InNamespace(c.Namespace),
			client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}); err != nil {
			return nil, fmt.Errorf("list member claims: %w", err)
		}
		for i := range claims.Items {
			if pvc := &claims.Items[i]; pvc.DeletionTimestamp == nil && metav1IsControlledBy(pvc, c) {
				o.planner.Claims = append(o.planner.Claims, pvc.Name)
			}
		}
		o.planner.KnownMembers = append(append([]string(nil), c.Status.Members.Ready...), c.Status.Members.Unready...)
	}
	// Endpoints are pod IPs, not DNS names: the operator must see a member as soon as its
	// process serves, whatever the state of DNS. (With client TLS the certificates name
	// the DNS names, so there the DNS names are used.)
	var endpoints []string
	epOfPod := map[string]string{}
	recovering := recoveryUnderway(c, pods.Items)
	for i := range pods.Items {
		p := &pods.Items[i]
		if !metav1IsControlledBy(p, c) {
			continue
		}
		o.pods[p.Name] = p
		// A pod whose etcd process is known not to run (killed, crashed, waiting for a
		// restart) is not dialed: a dial to it only fails after the probe timeout, and
		// that would delay noticing the failure by as much.
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || etcdNotRunning(p) {
			continue
		}
		// During a quorum-loss recovery two clusters run under our labels: the old one
		// without quorum and the new one-member cluster. Only the new one is observed;
		// a client mixing both would report a membership that exists nowhere.
		// Only once the record is borne out by the new member's marked pod: until then
		// the old cluster is what there is, and what the planner checks the record on.
		if recovering && p.Name != c.Status.Recovery.Member {
			continue
		}
		ep := r.memberEndpoint(c, p)
		endpoints = append(endpoints, ep)
		epOfPod[p.Name] = ep
	}
	sort.Strings(endpoints)
	o.warnings = r.kubeletWarnings(ctx, o.pods)

	statusOf := map[uint64]etcdadmin.EndpointStatus{}
	podOfMember := map[uint64]string{}
	if len(endpoints) > 0 {
		tlsCfg, err := r.operatorTLS(ctx, c)
		if err != nil {
			return nil, err
		}
		admin, err := etcdadmin.New(etcdadmin.Config{
			Endpoints:    endpoints,
			TLS:          tlsCfg,
			DialTimeout:  2 * time.Second,
			CallTimeout:  3 * time.Second,
			ProbeTimeout: 2 * time.Second,
			Retry:        etcdadmin.Backoff{Budget: etcdCallBudget},
			Log:          lg.WithName("etcd"),
			Metrics:      etcdRequestMetrics(),
		})
		if err != nil {
			return nil, fmt.Errorf("etcd client: %w", err)
		}
		o.admin = admin
		sts := admin.Status(ctx, endpoints...)
		for _, st := range sts {
			if st.Err != nil {
				continue
			}
			statusOf[st.MemberID] = st
			if st.Leader != 0 && o.planner.LeaderID == 0 {
				o.planner.LeaderID = st.Leader
			}
			if o.clusterID == 0 {
				o.clusterID = st.ClusterID
			}
			if st.IsLeader() {
				o.leaderEP = st.Endpoint
				o.clusterID = st.ClusterID
			}
			for pod, ep := range epOfPod {
				if ep == st.Endpoint {
					podOfMember[st.MemberID] = pod
				}
			}
		}
		// A linearizable list first: it cannot be stale. Without a quorum it fails, and a
		// serializable list from any live member still tells the planner who the members
		// are, so it can tell "quorum lost" from "not created yet".
		listCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		members, err := admin.MemberList(listCtx)
		cancel()
		if err != nil {
			lg.V(1).Info("linearizable member list unavailable", "err", err.Error())
			members, err = admin.MemberListSerializable(ctx)
		}
		if err == nil {
			o.members = members
			o.planner.MemberLists = ownMemberLists(ctx, admin, endpoints)
		}
	}

	seen := map[string]bool{}
	if o.members != nil {
		o.planner.MembersKnown = true
		o.planner.Bootstrapped = true
		for _, m := range o.members {
			name := memberName(m)
			st, reachable := statusOf[m.ID]
			pm := planner.Member{
				ID: m.ID, Name: name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner,
				Reachable: reachable,
			}
			if reachable {
				pm.RaftIndex, pm.Revision, pm.Version = st.RaftIndex, st.Revision, st.Version
				pm.LeaderUnknown = st.Leader == 0
			}
			subject := "member/" + etcdadmin.FormatID(m.ID)
			seen[subject] = true
			pm.UnhealthySince = r.health.observe(key, subject, reachable, now)
			o.planner.Members = append(o.planner.Members, pm)

			// A learner the operator added whose pending record was lost (operator stopped
			// between MemberAdd and the status write) is adopted, not duplicated.
			if m.IsLearner && !m.Started() && o.planner.Pending == nil && name != "" {
				o.planner.Pending = &planner.PendingMember{Name: name, ID: m.ID, AddedAt: now}
			}
		}
	}

	nodeReady := map[string]bool{}
	for _, p := range o.pods {
		mid := memberIDAnnotation(p)
		for id, pod := range podOfMember {
			if pod == p.Name {
				mid = id
			}
		}
		pp := planner.Pod{
			Name:         p.Name,
			MemberID:     mid,
			Phase:        planner.PodPhase(p.Status.Phase),
			Ready:        podReady(p),
			Deleting:     p.DeletionTimestamp != nil,
			Version:      render.NormalizeVersion(p.Annotations[render.AnnotationVersion]),
			CreatedAt:    p.CreationTimestamp.Time,
			NodeNotReady: p.Spec.NodeName != "" && !r.nodeIsReady(ctx, p.Spec.NodeName, nodeReady),
		}
		pp.Terminated, pp.CrashLooping = etcdContainerState(p)
		pp.Image, pp.EtcdRunning, pp.EtcdNeverRan = etcdContainerFacts(p)
		pp.RecoveryToken = p.Annotations[render.AnnotationRecoveryToken]
		subject := "pod/" + p.Name
		seen[subject] = true
		pp.UnhealthySince = r.health.observe(key, subject, pp.Ready, now)
		o.planner.Pods = append(o.planner.Pods, pp)
	}
	sort.Slice(o.planner.Pods, func(i, j int) bool { return o.planner.Pods[i].Name < o.planner.Pods[j].Name })
	r.health.retain(key, seen)
	return o, nil
}

// memberName is a member's name, or for one not started yet the name in its peer URL,
// which the operator chose.
func memberName(m etcdadmin.Member) string {
	if m.Name != "" {
		return m.Name
	}
	return memberNameFromPeerURLs(m.PeerURLs)
}

// ownMemberLists asks each member for the member list as it alone sees it: the
// witnesses the planner needs before it calls a pod an orphan.
func ownMemberLists(ctx context.Context, admin *etcdadmin.Admin, endpoints []string) []planner.MemberList {
	var out []planner.MemberList
	for _, l := range admin.MemberLists(ctx, endpoints...) {
		if l.Err != nil {
			continue
		}
		pl := planner.MemberList{From: l.From}
		for _, m := range l.Members {
			pl.Members = append(pl.Members, planner.Member{ID: m.ID, Name: memberName(m), PeerURLs: m.PeerURLs, IsLearner: m.IsLearner})
		}
		out = append(out, pl)
	}
	return out
}

// memberEndpoint is the client URL the operator dials for a member pod.
func (r *Reconciler) memberEndpoint(c *etcdv1beta2.EtcdCluster, p *corev1.Pod) string {
	return render.MemberClientURL(c, p, r.ClusterDomain)
}

// operatorTLS loads the operator's client certificate for a TLS-secured cluster.
func (r *Reconciler) operatorTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*tls.Config, error) {
	if !render.ClientTLS(c) {
		return nil, nil
	}
	cfg, err := etcdadmin.ClientTLSFromSecret(ctx, r.Client, c.Namespace, c.Spec.TLS.Static.OperatorSecret)
	return cfg, tlsSecretError(err)
}

func (r *Reconciler) nodeIsReady(ctx context.Context, name string, cache map[string]bool) bool {
	if ready, ok := cache[name]; ok {
		return ready
	}
	var n corev1.Node
	ready := true // an unreadable Node is not evidence of a dead member
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &n); err == nil {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ready = cond.Status == corev1.ConditionTrue
			}
		}
	}
	cache[name] = ready
	return ready
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// etcdContainerState reports whether the etcd container is terminated (not running) and
// whether it is crash-looping.
func etcdContainerState(p *corev1.Pod) (terminated, crashLooping bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != render.ContainerName {
			continue
		}
		if cs.State.Terminated != nil {
			terminated = true
		}
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			crashLooping = true
		}
	}
	return terminated, crashLooping
}

// recoveryUnderway reports that the recorded recovery's new member has its pod, marked
// by the operator with that recovery's token.
func recoveryUnderway(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) bool {
	rec := c.Status.Recovery
	if rec == nil || rec.Token == "" {
		return false
	}
	for i := range pods {
		p := &pods[i]
		if p.Name == rec.Member && metav1IsControlledBy(p, c) && p.Annotations[render.AnnotationRecoveryToken] == rec.Token {
			return true
		}
	}
	return false
}

// etcdContainerFacts returns the etcd container's image (from the spec), whether the
// kubelet reports it running, and whether it has never run in this pod (no status
// yet, or waiting with no earlier termination and no restart): then it wrote no data.
func etcdContainerFacts(p *corev1.Pod) (image string, running, neverRan bool) {
	for _, ct := range p.Spec.Containers {
		if ct.Name == render.ContainerName {
			image = ct.Image
		}
	}
	neverRan = true
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != render.ContainerName {
			continue
		}
		running = cs.State.Running != nil
		neverRan = cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil && cs.RestartCount == 0
	}
	return image, running, neverRan
}

// etcdNotRunning reports that the kubelet says the etcd container is not running (a
// terminated or waiting state). Without a container status the answer is "unknown", not
// "not running".
func etcdNotRunning(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == render.ContainerName {
			return cs.State.Running == nil && (cs.State.Terminated != nil || cs.State.Waiting != nil)
		}
	}
	return false
}

func memberIDAnnotation(p *corev1.Pod) uint64 {
	if v := p.Annotations[render.AnnotationMemberID]; v != "" {
		if id, err := etcdadmin.ParseID(v); err == nil {
			return id
		}
	}
	return 0
}

// memberNameFromPeerURLs recovers a member's name from the peer URL the operator gave it:
// <scheme>://<name>.<cluster>.<ns>.svc[.<domain>]:2380.
func memberNameFromPeerURLs(urls []string) string {
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			continue
		}
		host := u.Hostname()
		if net.ParseIP(host) != nil {
			continue
		}
		if name, _, ok := strings.Cut(host, "."); ok && name != "" {
			return name
		}
	}
	return ""
}

func metav1IsControlledBy(obj client.Object, owner client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
