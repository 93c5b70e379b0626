package etcdcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// What etcd says about a cluster's members: which pods are dialled, and what they answer.

// dialTargets are the client endpoints of the own pods whose etcd may serve, sorted,
// and the endpoint of each such pod.
//
// Endpoints are pod IPs, not DNS names: the operator must see a member as soon as its
// process serves, whatever the state of DNS. (With client TLS the certificates name
// the DNS names, so there the DNS names are used.)
func (r *Reconciler) dialTargets(c *etcdv1beta2.EtcdCluster, pods map[string]*corev1.Pod, recovering bool) (endpoints []string, epOfPod map[string]string) {
	epOfPod = map[string]string{}
	var dialled []*corev1.Pod
	for _, p := range pods {
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
		dialled = append(dialled, p)
	}
	// One scheme every dialled pod serves (http while TLS is being turned on).
	useTLS := render.DialTLS(c, dialled)
	for _, p := range dialled {
		ep := render.MemberDialURL(c, p, r.ClusterDomain, useTLS)
		endpoints = append(endpoints, ep)
		epOfPod[p.Name] = ep
	}
	sort.Strings(endpoints)
	return endpoints, epOfPod
}

// recoveryUnderway reports that the recorded recovery's new member has its pod, marked
// by the operator with that recovery's token and signed by it (act_marker.go).
func (r *Reconciler) recoveryUnderway(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) bool {
	rec := c.Status.Recovery
	if rec == nil || rec.Token == "" {
		return false
	}
	for i := range pods {
		p := &pods[i]
		if p.Name == rec.Member && metav1IsControlledBy(p, c) && r.verifiedMarker(c, p) == rec.Token {
			return true
		}
	}
	return false
}

// memberEndpoint is the client URL the operator dials for a member pod.
func (r *Reconciler) memberEndpoint(c *etcdv1beta2.EtcdCluster, p *corev1.Pod) string {
	return render.MemberClientURL(c, p, r.ClusterDomain)
}

// connect is an etcd admin client for the endpoints, with the operator's client
// certificate when the cluster requires one and the root user's credentials when it has
// etcd auth (auth; a refused password is recorded there and the client made without it).
func (r *Reconciler) connect(ctx context.Context, c *etcdv1beta2.EtcdCluster, endpoints []string, auth *authObservation) (*etcdadmin.Admin, error) {
	var tlsCfg *tls.Config
	if strings.HasPrefix(endpoints[0], "https://") {
		cfg, err := r.operatorTLS(ctx, c)
		if err != nil {
			return nil, err
		}
		tlsCfg = cfg
	}
	user, password := auth.credentials()
	admin, err := r.dialAdmin(c, endpoints, tlsCfg, user, password)
	if errors.Is(err, etcdadmin.ErrAuthFailed) {
		auth.rejected = true
		admin, err = r.dialAdmin(c, endpoints, tlsCfg, "", "")
	}
	return admin, err
}

func (r *Reconciler) dialAdmin(c *etcdv1beta2.EtcdCluster, endpoints []string, tlsCfg *tls.Config, user, password string) (*etcdadmin.Admin, error) {
	// The client outlives this reconcile (memory_admins.go): it logs with the controller's
	// logger, not this reconcile's (whose reconcileID would label every later one).
	lg := r.etcdLog.WithValues("EtcdCluster", clusterKey(c))
	return r.admins.get(clusterKey(c), c.UID, endpoints, tlsCfg, adminCreds{user, password}, func() (*etcdadmin.Admin, error) {
		admin, err := etcdadmin.New(etcdadmin.Config{
			Endpoints:    endpoints,
			TLS:          tlsCfg,
			Username:     user,
			Password:     password,
			DialTimeout:  2 * time.Second,
			CallTimeout:  3 * time.Second,
			ProbeTimeout: 2 * time.Second,
			Retry:        etcdadmin.Backoff{Budget: etcdCallBudget},
			Log:          lg,
			Metrics:      etcdRequestMetrics(),
		})
		if err != nil {
			return nil, fmt.Errorf("etcd client: %w", err)
		}
		return admin, nil
	})
}

// operatorTLS loads the operator's client certificate for a TLS-secured cluster.
func (r *Reconciler) operatorTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*tls.Config, error) {
	if !render.ClientTLS(c) {
		return nil, nil
	}
	cfg, err := etcdadmin.ClientTLSFromSecret(ctx, r.Client, c.Namespace, c.Spec.TLS.Static.OperatorSecret)
	return cfg, tlsSecretError(err)
}

// etcdAnswers is what etcd answered in one observation. The zero value is what an
// observation with no endpoint to dial has.
type etcdAnswers struct {
	statuses []etcdadmin.EndpointStatus // one per endpoint, failed ones included
	members  []etcdadmin.Member         // nil when no member list was answered
	lists    []planner.MemberList       // each member's own list; only with members
	space    spaceObservation           // sizes and alarms (observe_space.go)
}

// askEtcd asks every endpoint for its status (each bounded by within; observe_probe.go)
// and each that answers for its own member list, the cluster for its member list and
// its alarms, and takes the sizes from the statuses.
func askEtcd(ctx context.Context, admin *etcdadmin.Admin, endpoints []string, within func(string) time.Duration) etcdAnswers {
	ans, _ := askMembersQuorum(ctx, admin, endpoints, within, true)
	return ans
}

// askMembers asks every endpoint for its status and the cluster for its member list: all
// that status.members needs (status_members.go). within bounds each status probe as in
// askEtcd; nil: the client's ProbeTimeout for all.
func askMembers(ctx context.Context, admin *etcdadmin.Admin, endpoints []string, within func(string) time.Duration) etcdAnswers {
	ans, _ := askMembersQuorum(ctx, admin, endpoints, within, false)
	return ans
}

// askMembersQuorum is askMembers (askEtcd with all), also telling whether the
// linearizable list answered.
//
// The questions are asked at once, not one after the other: an endpoint's own member
// list right after its status answered, beside the cluster's member list. Etcd's answers
// are most of a reconcile's time, and under churn, on a busy machine, waits in a row made
// its p99 (issue 32; etcd_operator_cluster_reconcile_phase_seconds shows the observe
// phase). The order never mattered to what is concluded: a member's own list may lag the
// linearizable one whenever it is read (the planner's orphan rule waits out young pods
// for that reason). The alarms come from the statuses, the alarm list only when one
// reports an alarm (askSpace).
//
// A linearizable list is served only through a member that knows a leader. Once the
// statuses are in and none that answered knows one (a cluster forming, or electing), the
// list is abandoned rather than waited for until its timeout: while a size-3 cluster
// formed, that wait was most of its reconciles (creating p99 8.5 s at 10 × 3). The
// serializable list that follows is what the planner got after the timeout anyway, and
// without any list it does nothing destructive (planNoMembers).
func askMembersQuorum(ctx context.Context, admin *etcdadmin.Admin, endpoints []string, within func(string) time.Duration, all bool) (etcdAnswers, bool) {
	var (
		ans       etcdAnswers
		own       []etcdadmin.OwnMemberList // by endpoint; only with all
		members   []etcdadmin.Member
		listErr   error
		abandoned bool // written before together.Wait returns, read after
		together  sync.WaitGroup
	)
	// A linearizable list: it cannot be stale. Without a quorum it fails, and a
	// serializable list from any live member still tells the planner who the members
	// are, so it can tell "quorum lost" from "not created yet".
	listCtx, abandon := context.WithTimeout(ctx, 5*time.Second)
	defer abandon()
	together.Go(func() {
		ans.statuses, own = askEndpoints(ctx, admin, endpoints, within, all, func(statuses []etcdadmin.EndpointStatus) {
			if !slices.ContainsFunc(statuses, knowsLeader) {
				abandoned = true
				abandon()
			}
		})
	})
	together.Go(func() { members, listErr = admin.MemberList(listCtx) })
	together.Wait()

	quorum := listErr == nil
	switch {
	case quorum:
	case !slices.ContainsFunc(ans.statuses, answeredStatus):
		// No member answered even its status: none would answer a list either, and
		// asking would wait out the call timeout on members that do not serve yet
		// (etcd answers nothing before it has joined), which made a forming cluster's
		// observations take seconds. Without a list the planner only waits.
		log.FromContext(ctx).V(1).Info("no member answered: no member list", "err", listErr.Error())
	default:
		log.FromContext(ctx).V(1).Info("linearizable member list unavailable", "err", listErr.Error(), "abandoned", abandoned)
		members, listErr = admin.MemberListSerializable(ctx)
	}
	if listErr == nil {
		ans.members = members
	}
	if !quorum && ans.members != nil {
		// Without quorum the planner may pick a recovery's survivor from this one
		// observation's answers: none of them may rest on a probe cut short. (Without
		// any member list it names no survivor: a cluster still forming is not re-asked.)
		again := reaskCutShort(ctx, admin, ans.statuses, within)
		if all && len(again) > 0 {
			own = append(own, admin.MemberLists(ctx, again...)...)
		}
	}
	if all {
		if ans.members != nil {
			ans.lists = ownMemberLists(own)
		}
		ans.space = askSpace(ctx, admin, ans.statuses, quorum) // observe_space.go
	}
	return ans, quorum
}

// askEndpoints asks each endpoint for its status (bounded by within) and, with ownLists,
// each that answers for its own member list right after. One that did not answer is not
// asked for its list: that would wait a second timeout on it (the reconcile of a cluster
// with a starting or dying member took 5 s instead of 2 s, BenchmarkScale's reconcile
// p99), and a list it cannot give is one witness fewer, which only makes the planner wait.
// statusesIn is called with all the statuses as soon as they are in, while own lists may
// still be asked for.
func askEndpoints(ctx context.Context, admin *etcdadmin.Admin, endpoints []string, within func(string) time.Duration, ownLists bool, statusesIn func([]etcdadmin.EndpointStatus)) ([]etcdadmin.EndpointStatus, []etcdadmin.OwnMemberList) {
	statuses := make([]etcdadmin.EndpointStatus, len(endpoints))
	lists := make([]etcdadmin.OwnMemberList, len(endpoints))
	var wg, answered sync.WaitGroup
	answered.Add(len(endpoints))
	for i, ep := range endpoints {
		wg.Go(func() {
			statuses[i] = admin.StatusWithin(ctx, within, ep)[0]
			answered.Done()
			if ownLists && statuses[i].Err == nil {
				lists[i] = admin.MemberLists(ctx, ep)[0]
			}
		})
	}
	wg.Go(func() { answered.Wait(); statusesIn(statuses) })
	wg.Wait()
	var got []etcdadmin.OwnMemberList
	for i := range lists {
		if lists[i].Endpoint != "" {
			got = append(got, lists[i])
		}
	}
	return statuses, got
}

// answeredStatus: the member answered its status.
func answeredStatus(s etcdadmin.EndpointStatus) bool { return s.Err == nil }

// knowsLeader: the member answered and named a leader.
func knowsLeader(s etcdadmin.EndpointStatus) bool {
	return s.Err == nil && s.Leader != 0
}

// reaskCutShort asks again, with the client's full ProbeTimeout, every endpoint whose
// probe failed under a shorter bound (within), puts the new answers in statuses and
// returns the endpoints that answered this time.
func reaskCutShort(ctx context.Context, admin *etcdadmin.Admin, statuses []etcdadmin.EndpointStatus, within func(string) time.Duration) (answeredNow []string) {
	if within == nil {
		return nil
	}
	var again []string
	at := map[string]int{}
	for i, st := range statuses {
		if st.Err != nil && within(st.Endpoint) > 0 {
			again = append(again, st.Endpoint)
			at[st.Endpoint] = i
		}
	}
	if len(again) == 0 {
		return
	}
	for _, st := range admin.Status(ctx, again...) {
		statuses[at[st.Endpoint]] = st
		if st.Err == nil {
			answeredNow = append(answeredNow, st.Endpoint)
		}
	}
	return answeredNow
}

// ownMemberLists are the member lists as each member alone sees it that were answered:
// the witnesses the planner needs before it calls a pod an orphan.
func ownMemberLists(lists []etcdadmin.OwnMemberList) []planner.MemberList {
	var out []planner.MemberList
	for _, l := range lists {
		if l.Err != nil {
			continue
		}
		pl := planner.MemberList{From: l.From, ClusterID: l.ClusterID}
		for _, m := range l.Members {
			pl.Members = append(pl.Members, planner.Member{ID: m.ID, Name: memberName(m), PeerURLs: m.PeerURLs, IsLearner: m.IsLearner})
		}
		out = append(out, pl)
	}
	return out
}
