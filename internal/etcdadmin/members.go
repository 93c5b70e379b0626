package etcdadmin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one entry of the cluster's member list.
type Member struct {
	ID         uint64
	Name       string // empty until the member has started and published itself
	PeerURLs   []string
	ClientURLs []string // empty until the member has started
	IsLearner  bool
}

// Started reports whether the member has started and joined: etcd fills in the
// name and client URLs only then.
func (m Member) Started() bool { return m.Name != "" || len(m.ClientURLs) > 0 }

func (m Member) String() string {
	role := "voter"
	if m.IsLearner {
		role = "learner"
	}
	return fmt.Sprintf("%s(%s %s %v)", FormatID(m.ID), m.Name, role, m.PeerURLs)
}

func fromPB(ms []*pb.Member) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		if m == nil {
			continue
		}
		out = append(out, Member{
			ID:         m.ID,
			Name:       m.Name,
			PeerURLs:   slices.Clone(m.PeerURLs),
			ClientURLs: slices.Clone(m.ClientURLs),
			IsLearner:  m.IsLearner,
		})
	}
	return out
}

// FindByID returns the member with that ID.
func FindByID(ms []Member, id uint64) (Member, bool) {
	for _, m := range ms {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

// FindByPeerURL returns the member that has peerURL among its peer URLs.
func FindByPeerURL(ms []Member, peerURL string) (Member, bool) {
	for _, m := range ms {
		if slices.Contains(m.PeerURLs, peerURL) {
			return m, true
		}
	}
	return Member{}, false
}

// AddResult is the outcome of adding a member.
type AddResult struct {
	Member   Member   // the added member (ID and peer URLs; no name yet)
	Members  []Member // the member list right after the change, including Member
	Existing bool     // EnsureLearner found the member already present and added nothing
}

// MemberList returns the members, read linearizably (it needs a quorum, and
// it never shows a list older than a change this Admin made).
func (a *Admin) MemberList(ctx context.Context) ([]Member, error) {
	return retry(ctx, a, "MemberList", "", a.cfg.CallTimeout, func(ctx context.Context) ([]Member, error) {
		resp, err := a.client.MemberList(ctx)
		if err != nil {
			return nil, err
		}
		return fromPB(resp.Members), nil
	})
}

// MemberListFrom returns the member list as one member sees it, without
// asking the quorum (a serializable read): it answers while the quorum is
// lost, which MemberList cannot, but may lag behind a recent change. One
// attempt, bounded by CallTimeout.
func (a *Admin) MemberListFrom(ctx context.Context, endpoint string) ([]Member, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	o, err := a.dialOne(endpoint)
	if err != nil {
		return nil, err
	}
	resp, err := o.client.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		kind, _ := classify(context.Background(), err)
		err = a.withDiagnosis(context.WithoutCancel(ctx), err, endpoint)
		return nil, &Error{Op: "MemberListFrom", Target: endpoint, Kind: kind, Err: err, Attempts: 1}
	}
	return fromPB(resp.Members), nil
}

// OwnMemberList is one endpoint's own answer to a serializable MemberList.
type OwnMemberList struct {
	Endpoint string
	// From is the ID of the member that answered, and ClusterID the cluster it says it
	// belongs to, from its response header.
	From      uint64
	ClusterID uint64
	Members   []Member
	Err       error
}

// MemberLists asks each endpoint (default: all configured ones) at once for the
// member list as that member alone sees it. Each answer says which member gave it,
// so a caller can require agreement of a majority of members rather than trust
// whichever answered first.
func (a *Admin) MemberLists(ctx context.Context, endpoints ...string) []OwnMemberList {
	if len(endpoints) == 0 {
		endpoints = a.Endpoints()
	}
	out := make([]OwnMemberList, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() { out[i] = a.ownMemberList(ctx, ep) })
	}
	wg.Wait()
	return out
}

func (a *Admin) ownMemberList(ctx context.Context, endpoint string) OwnMemberList {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	res := OwnMemberList{Endpoint: endpoint}
	o, err := a.dialOne(endpoint)
	if err != nil {
		res.Err = err
		return res
	}
	resp, err := o.client.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		kind, _ := classify(context.Background(), err)
		res.Err = &Error{Op: "MemberLists", Target: endpoint, Kind: kind, Err: err, Attempts: 1}
		return res
	}
	if resp.Header == nil || resp.Header.MemberId == 0 {
		res.Err = &Error{Op: "MemberLists", Target: endpoint, Kind: ErrUnavailable, Err: errors.New("answer names no member"), Attempts: 1}
		return res
	}
	res.From, res.ClusterID, res.Members = resp.Header.MemberId, resp.Header.ClusterId, fromPB(resp.Members)
	return res
}

// MemberListSerializable asks every configured endpoint at once for its
// serializable member list (see MemberListFrom) and returns the first answer.
// For when MemberList fails for lack of a quorum: the answer may be stale.
func (a *Admin) MemberListSerializable(ctx context.Context) ([]Member, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the slower requests once one answered
	eps := a.Endpoints()
	type answer struct {
		ms  []Member
		err error
	}
	answers := make(chan answer, len(eps))
	for _, ep := range eps {
		go func() {
			ms, err := a.MemberListFrom(ctx, ep)
			answers <- answer{ms, err}
		}()
	}
	var first error
	for range eps {
		r := <-answers
		if r.err == nil {
			return r.ms, nil
		}
		if first == nil {
			first = r.err
		}
	}
	return nil, &Error{Op: "MemberListSerializable", Kind: ErrNoEndpoint, Err: first, Attempts: 1}
}

// MemberAddAsLearner adds a non-voting member with the given peer URLs. The
// new member must then be started with --initial-cluster-state=existing and
// promoted once it has caught up (MemberPromote / EnsurePromoted).
//
// "unhealthy cluster" (a listed member is down, or the cluster has just
// started) is retried within the budget; when it does not clear, the error
// wraps ErrUnhealthyCluster. If a member with one of these peer URLs exists,
// the error wraps ErrPeerURLExists; see EnsureLearner for the idempotent form.
func (a *Admin) MemberAddAsLearner(ctx context.Context, peerURLs []string) (AddResult, error) {
	return a.memberAdd(ctx, "MemberAddAsLearner", peerURLs, true)
}

// MemberAdd adds a voting member. A voting member counts towards the quorum
// from this moment on, before it has started: prefer MemberAddAsLearner,
// which never endangers the quorum. This exists for bootstrap-style flows.
func (a *Admin) MemberAdd(ctx context.Context, peerURLs []string) (AddResult, error) {
	return a.memberAdd(ctx, "MemberAdd", peerURLs, false)
}

func (a *Admin) memberAdd(ctx context.Context, op string, peerURLs []string, learner bool) (AddResult, error) {
	target := strings.Join(peerURLs, ",")
	if err := validatePeerURLs(peerURLs); err != nil {
		return AddResult{}, &Error{Op: op, Target: target, Kind: ErrInvalidPeerURL, Err: err, Attempts: 0}
	}
	res, err := retry(ctx, a, op, target, a.cfg.CallTimeout, func(ctx context.Context) (AddResult, error) {
		var r *clientv3.MemberAddResponse
		var err error
		if learner {
			r, err = a.client.MemberAddAsLearner(ctx, peerURLs)
		} else {
			r, err = a.client.MemberAdd(ctx, peerURLs)
		}
		if err != nil {
			return AddResult{}, err
		}
		resp := (*pb.MemberAddResponse)(r)
		added := fromPB([]*pb.Member{resp.GetMember()})
		if len(added) != 1 {
			return AddResult{}, fmt.Errorf("etcd answered %s without the new member", op)
		}
		return AddResult{Member: added[0], Members: fromPB(resp.GetMembers())}, nil
	})
	if err == nil {
		a.log.Info("etcd member added", "op", op, "id", FormatID(res.Member.ID), "peerURLs", peerURLs, "learner", learner)
	}
	return res, err
}

func validatePeerURLs(us []string) error {
	if len(us) == 0 {
		return fmt.Errorf("no peer URL given")
	}
	for _, s := range us {
		u, err := url.Parse(s)
		if err != nil {
			return err
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("%q: scheme must be http or https", s)
		}
		if _, _, err := net.SplitHostPort(u.Host); err != nil {
			return fmt.Errorf("%q: host must be host:port: %v", s, err)
		}
		if u.Path != "" && u.Path != "/" {
			return fmt.Errorf("%q: must not have a path", s)
		}
	}
	return nil
}

// MemberPromote turns a learner into a voter. ErrLearnerNotReady (the learner
// has not caught up with the leader yet) is retried within the budget.
// Promoting a voter fails with ErrMemberNotLearner; see EnsurePromoted.
func (a *Admin) MemberPromote(ctx context.Context, id uint64) ([]Member, error) {
	ms, err := retry(ctx, a, "MemberPromote", FormatID(id), a.cfg.CallTimeout, func(ctx context.Context) ([]Member, error) {
		resp, err := a.client.MemberPromote(ctx, id)
		if err != nil {
			return nil, err
		}
		return fromPB(resp.Members), nil
	})
	if err == nil {
		a.log.Info("etcd learner promoted", "id", FormatID(id))
	}
	return ms, err
}

// MemberRemove removes a member. Removing the leader works in etcd but costs
// an election: move the leadership away first (MoveLeader). Removing an
// unknown ID fails with ErrMemberNotFound; see EnsureRemoved.
//
// Measured: right after a leader change etcd answers "unhealthy cluster" for
// about 5 s (retried here). When the request reaches the member being
// removed, that member may apply the removal and stop before answering
// ("server stopped", retried), and the retry then finds the member gone:
// ErrMemberNotFound after a removal that did happen. EnsureRemoved treats that
// as success.
func (a *Admin) MemberRemove(ctx context.Context, id uint64) ([]Member, error) {
	ms, err := retry(ctx, a, "MemberRemove", FormatID(id), a.cfg.CallTimeout, func(ctx context.Context) ([]Member, error) {
		resp, err := a.client.MemberRemove(ctx, id)
		if err != nil {
			return nil, err
		}
		return fromPB(resp.Members), nil
	})
	if err == nil {
		a.log.Info("etcd member removed", "id", FormatID(id))
	}
	return ms, err
}

// EnsureLearner makes sure a member with exactly these peer URLs exists,
// adding it as a learner if not. It is what a controller calls: if it crashed
// after a previous add (or that add timed out after being applied), the member
// is found and its ID returned with Existing set, whether it is still a
// learner or already a voter (check Member.IsLearner). A member holding only
// some of these URLs is a conflict: ErrPeerURLExists.
func (a *Admin) EnsureLearner(ctx context.Context, peerURLs []string) (AddResult, error) {
	if err := validatePeerURLs(peerURLs); err != nil {
		return AddResult{}, &Error{Op: "EnsureLearner", Target: strings.Join(peerURLs, ","), Kind: ErrInvalidPeerURL, Err: err}
	}
	find := func() (AddResult, bool, error) {
		ms, err := a.MemberList(ctx)
		if err != nil {
			return AddResult{}, false, err
		}
		for _, m := range ms {
			if !overlaps(m.PeerURLs, peerURLs) {
				continue
			}
			if !sameSet(m.PeerURLs, peerURLs) {
				return AddResult{}, false, &Error{Op: "EnsureLearner", Target: strings.Join(peerURLs, ","), Kind: ErrPeerURLExists,
					Err: fmt.Errorf("member %s has peer URLs %v", FormatID(m.ID), m.PeerURLs), Attempts: 1}
			}
			return AddResult{Member: m, Members: ms, Existing: true}, true, nil
		}
		return AddResult{}, false, nil
	}
	if res, ok, err := find(); err != nil || ok {
		return res, err
	}
	res, err := a.MemberAddAsLearner(ctx, peerURLs)
	if errors.Is(err, ErrPeerURLExists) {
		// Another actor (or an earlier attempt of ours whose answer was lost)
		// added it between the list and the add.
		if res, ok, ferr := find(); ferr == nil && ok {
			return res, nil
		}
	}
	return res, err
}

// EnsurePromoted makes sure the member is a voter: a learner is promoted
// (waiting within the budget for it to catch up), a voter is left alone. It
// returns the member list. An unknown ID is ErrMemberNotFound.
func (a *Admin) EnsurePromoted(ctx context.Context, id uint64) ([]Member, error) {
	ms, err := a.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	m, ok := FindByID(ms, id)
	if !ok {
		return ms, &Error{Op: "EnsurePromoted", Target: FormatID(id), Kind: ErrMemberNotFound, Attempts: 1}
	}
	if !m.IsLearner {
		return ms, nil
	}
	ms, err = a.MemberPromote(ctx, id)
	if errors.Is(err, ErrMemberNotLearner) {
		// An earlier promote was applied although its answer was lost.
		return a.MemberList(ctx)
	}
	return ms, err
}

// EnsureRemoved makes sure the member is not in the cluster: removing an ID
// that is already gone is success. It returns the member list.
func (a *Admin) EnsureRemoved(ctx context.Context, id uint64) ([]Member, error) {
	ms, err := a.MemberRemove(ctx, id)
	if errors.Is(err, ErrMemberNotFound) {
		return a.MemberList(ctx)
	}
	return ms, err
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// MemberUpdate sets a member's peer URLs (how its peers dial it). Repeating it with
// the URLs the member already has changes nothing, so it is safe to retry after an
// answer was lost.
func (a *Admin) MemberUpdate(ctx context.Context, id uint64, peerURLs []string) ([]Member, error) {
	if err := validatePeerURLs(peerURLs); err != nil {
		return nil, &Error{Op: "MemberUpdate", Target: strings.Join(peerURLs, ","), Kind: ErrInvalidPeerURL, Err: err}
	}
	ms, err := retry(ctx, a, "MemberUpdate", FormatID(id), a.cfg.CallTimeout, func(ctx context.Context) ([]Member, error) {
		resp, err := a.client.MemberUpdate(ctx, id, peerURLs)
		if err != nil {
			return nil, err
		}
		return fromPB(resp.Members), nil
	})
	if err == nil {
		a.log.Info("etcd member peer URLs updated", "id", FormatID(id), "peerURLs", peerURLs)
	}
	return ms, err
}
