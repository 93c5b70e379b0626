package etcdadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EndpointStatus is what one member says about itself. Err is set (and the
// other fields are zero) when the endpoint did not answer in time.
type EndpointStatus struct {
	Endpoint         string
	ClusterID        uint64 // the cluster the member belongs to
	MemberID         uint64
	Leader           uint64 // 0: this member knows no leader
	RaftTerm         uint64
	RaftIndex        uint64
	RaftAppliedIndex uint64
	Revision         int64
	DBSize           int64 // bytes allocated by the backend file
	DBSizeInUse      int64 // bytes in use; DBSize-DBSizeInUse is what a defrag frees
	DBSizeQuota      int64 // the member's quota-backend-bytes; 0 from etcd < 3.6
	Version          string
	StorageVersion   string // etcd >= 3.6
	// DowngradeEnabled, DowngradeTarget: etcd's downgrade state (etcd >= 3.6; downgrade.go).
	DowngradeEnabled bool
	DowngradeTarget  string
	IsLearner        bool
	Errors           []string // alarms and errors the member reports (e.g. NOSPACE)
	Err              error
}

// IsLeader reports whether the member answered that it is the leader.
func (s EndpointStatus) IsLeader() bool {
	return s.Err == nil && s.Leader != 0 && s.Leader == s.MemberID
}

// Status asks each endpoint (the configured ones if none are given) for its
// status, concurrently, each bounded by ProbeTimeout. It never fails as a
// whole: look at each result's Err. Results are in the order of the endpoints.
func (a *Admin) Status(ctx context.Context, endpoints ...string) []EndpointStatus {
	return a.StatusWithin(ctx, nil, endpoints...)
}

// StatusWithin is Status with each endpoint's probe bounded by within(endpoint) when
// that is shorter than ProbeTimeout (0, or a nil within: ProbeTimeout). A caller that
// knows a member cannot be serving yet (its process is still starting) need not wait
// the whole ProbeTimeout for it; what to make of an answer cut short is the caller's.
func (a *Admin) StatusWithin(ctx context.Context, within func(endpoint string) time.Duration, endpoints ...string) []EndpointStatus {
	if len(endpoints) == 0 {
		endpoints = a.Endpoints()
	}
	out := make([]EndpointStatus, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() {
			pctx := ctx
			if within != nil {
				if d := within(ep); d > 0 && d < a.cfg.ProbeTimeout {
					var cancel context.CancelFunc
					pctx, cancel = context.WithTimeout(ctx, d)
					defer cancel()
				}
			}
			out[i] = a.statusOf(pctx, ep)
		})
	}
	wg.Wait()
	return out
}

// Answered reports whether ep has answered a status probe of this client since it was
// last configured (SetEndpoints drops what is known of an endpoint that leaves the list,
// so a member whose process stopped and whose endpoint came back starts unanswered).
func (a *Admin) Answered(ep string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.ones[ep]
	return ok && o.answered.Load()
}

func (a *Admin) statusOf(ctx context.Context, ep string) EndpointStatus {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.ProbeTimeout)
	defer cancel()
	var r *clientv3.StatusResponse
	o, err := a.dialOne(ep)
	if err == nil {
		r, err = o.maintenance.Status(ctx, ep)
	}
	if err != nil {
		if refusedToken(err) {
			a.dropToken() // auth.go: a fresh one for the next request
		}
		kind, _ := classify(context.Background(), err)
		err = a.withDiagnosis(context.WithoutCancel(ctx), err, ep)
		return EndpointStatus{Endpoint: ep, Err: &Error{Op: "Status", Target: ep, Kind: kind, Err: err, Attempts: 1}}
	}
	o.answered.Store(true)
	s := EndpointStatus{
		Endpoint:         ep,
		Leader:           r.Leader,
		RaftTerm:         r.RaftTerm,
		RaftIndex:        r.RaftIndex,
		RaftAppliedIndex: r.RaftAppliedIndex,
		DBSize:           r.DbSize,
		DBSizeInUse:      r.DbSizeInUse,
		DBSizeQuota:      r.DbSizeQuota,
		Version:          r.Version,
		StorageVersion:   r.StorageVersion,
		IsLearner:        r.IsLearner,
		Errors:           append([]string(nil), r.Errors...),
	}
	if d := r.DowngradeInfo; d != nil {
		s.DowngradeEnabled, s.DowngradeTarget = d.Enabled, d.TargetVersion
	}
	if r.Header != nil {
		s.ClusterID = r.Header.ClusterId
		s.MemberID = r.Header.MemberId
		s.Revision = r.Header.Revision
	}
	return s
}

// EndpointHealth is the health of one member.
type EndpointHealth struct {
	Endpoint string
	MemberID uint64 // 0 if the status could not be read
	Healthy  bool
	Took     time.Duration
	Err      error // why it is unhealthy
}

// Health checks each endpoint (the configured ones if none are given),
// concurrently, each bounded by ProbeTimeout: the member must answer its
// status, know a leader, report no alarm, and (voters only) serve a
// linearizable read, which proves it is connected to a working quorum.
// Learners cannot serve linearizable reads, so for them a known leader is
// enough.
func (a *Admin) Health(ctx context.Context, endpoints ...string) []EndpointHealth {
	if len(endpoints) == 0 {
		endpoints = a.Endpoints()
	}
	out := make([]EndpointHealth, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() { out[i] = a.healthOf(ctx, ep) })
	}
	wg.Wait()
	return out
}

func (a *Admin) healthOf(ctx context.Context, ep string) EndpointHealth {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, a.cfg.ProbeTimeout)
	defer cancel()
	h := EndpointHealth{Endpoint: ep}
	done := func(err error) EndpointHealth {
		h.Took, h.Err, h.Healthy = time.Since(start), err, err == nil
		return h
	}
	st := a.statusOf(ctx, ep)
	if st.Err != nil {
		return done(st.Err)
	}
	h.MemberID = st.MemberID
	if st.Leader == 0 {
		return done(&Error{Op: "Health", Target: ep, Kind: ErrNoLeader, Attempts: 1})
	}
	if len(st.Errors) > 0 {
		return done(&Error{Op: "Health", Target: ep, Err: fmt.Errorf("member reports: %s", strings.Join(st.Errors, "; ")), Attempts: 1})
	}
	if st.IsLearner {
		return done(nil)
	}
	o, err := a.dialOne(ep)
	if err != nil {
		return done(err)
	}
	// Any key will do; like etcdctl we read "health".
	_, err = o.client.Get(ctx, "health")
	if err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		kind, _ := classify(context.Background(), err)
		err = a.withDiagnosis(context.WithoutCancel(ctx), err, ep)
		return done(&Error{Op: "Health", Target: ep, Kind: kind, Err: err, Attempts: 1})
	}
	return done(nil)
}

// Leader finds the current leader and an endpoint that reaches it: one of the
// configured endpoints if the leader is among them, otherwise the leader's
// client URLs from the member list.
func (a *Admin) Leader(ctx context.Context) (id uint64, endpoint string, err error) {
	sts := a.Status(ctx)
	answered := false
	for _, s := range sts {
		if s.Err != nil {
			continue
		}
		answered = true
		if s.IsLeader() {
			return s.MemberID, s.Endpoint, nil
		}
		if s.Leader != 0 {
			id = s.Leader
		}
	}
	if !answered {
		return 0, "", &Error{Op: "Leader", Kind: ErrNoEndpoint, Err: firstErr(sts), Attempts: 1}
	}
	if id == 0 {
		return 0, "", &Error{Op: "Leader", Kind: ErrNoLeader, Attempts: 1}
	}
	ms, err := a.MemberList(ctx)
	if err != nil {
		return 0, "", err
	}
	m, ok := FindByID(ms, id)
	if !ok || len(m.ClientURLs) == 0 {
		return 0, "", &Error{Op: "Leader", Target: FormatID(id), Kind: ErrNoLeader, Err: errors.New("leader has no client URL in the member list"), Attempts: 1}
	}
	for _, s := range a.Status(ctx, m.ClientURLs...) {
		if s.IsLeader() && s.MemberID == id {
			return id, s.Endpoint, nil
		}
	}
	return 0, "", &Error{Op: "Leader", Target: FormatID(id), Kind: ErrLeaderChanged, Attempts: 1}
}

func firstErr(sts []EndpointStatus) error {
	for _, s := range sts {
		if s.Err != nil {
			return s.Err
		}
	}
	return nil
}

// MoveLeader transfers the leadership to the voting member `to`, sending the
// request to the current leader's endpoint (etcd accepts it only there). It is
// idempotent: if `to` already leads, nothing is sent. A leader change or
// election in between is retried with a fresh look-up of the leader.
func (a *Admin) MoveLeader(ctx context.Context, to uint64) error {
	ms, err := a.MemberList(ctx)
	if err != nil {
		return err
	}
	m, ok := FindByID(ms, to)
	if !ok {
		return &Error{Op: "MoveLeader", Target: FormatID(to), Kind: ErrMemberNotFound, Attempts: 1}
	}
	if m.IsLearner {
		return &Error{Op: "MoveLeader", Target: FormatID(to), Kind: ErrBadTransferee, Err: errors.New("member is a learner"), Attempts: 1}
	}
	var from uint64
	_, err = retry(ctx, a, "MoveLeader", FormatID(to), a.cfg.CallTimeout, func(ctx context.Context) (struct{}, error) {
		id, ep, err := a.Leader(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if from = id; id == to {
			return struct{}{}, nil
		}
		o, err := a.dialOne(ep)
		if err != nil {
			return struct{}{}, err
		}
		_, err = o.maintenance.MoveLeader(ctx, to)
		return struct{}{}, err
	})
	if err == nil && from != to {
		a.log.Info("etcd leadership moved", "from", FormatID(from), "to", FormatID(to))
	}
	return err
}

// Snapshot is a point-in-time copy of a member's database, streamed. It is
// the exact format of `etcdctl snapshot save` (the bbolt file followed by its
// SHA-256), restorable with etcdutl. Close it when done, also on error.
type Snapshot struct {
	io.ReadCloser
	Endpoint string
	MemberID uint64
	// Size is the length of the stream, database and hash, as etcd announced it
	// with the first message. A stream that ends before it or runs past it fails
	// the read, so a consumer may rely on it (e.g. as an upload's length).
	Size int64
	// Revision is the member's revision just before the stream opened: the
	// snapshot holds at least every revision up to it (etcd does not send the
	// exact revision; etcdutl's snapshot status reads it from the file).
	Revision int64
	// Version is the storage version the server reported with the stream
	// (etcd >= 3.6; use it to pick the etcd version that restores it). It is
	// empty for a few seconds after a cluster starts: etcd writes the storage
	// version only once the cluster version is decided (seen here ~4 s after
	// start); fall back to ServerVersion then.
	Version string
	// ServerVersion is the etcd binary version of that member.
	ServerVersion string
}

// SnapshotOptions chooses the member to snapshot.
type SnapshotOptions struct {
	// Endpoint to stream from. Empty: among the configured endpoints that
	// answer, the one with the highest revision (the most recent data),
	// preferring a follower on a tie so the leader is spared the work.
	Endpoint string
}

// Snapshot opens a snapshot stream. Opening is retried within the budget; the
// stream itself then runs until it is read to the end, Close is called, or
// ctx ends (so give ctx no short deadline for a large database).
func (a *Admin) Snapshot(ctx context.Context, opts SnapshotOptions) (*Snapshot, error) {
	return retry(ctx, a, "Snapshot", opts.Endpoint, a.cfg.CallTimeout, func(actx context.Context) (*Snapshot, error) {
		st, err := a.pickSnapshotSource(actx, opts.Endpoint)
		if err != nil {
			return nil, err
		}
		c, err := a.dialSnapshot(st.Endpoint)
		if err != nil {
			return nil, err
		}
		// The stream must outlive this attempt's timeout: derive it from the
		// caller's ctx, cancel it on Close, and bound only the opening.
		sctx, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(a.cfg.CallTimeout, cancel)
		stream, version, err := openSnapshotStream(sctx, c)
		if !timer.Stop() && err == nil {
			err = fmt.Errorf("opening the snapshot stream took longer than %v: %w", a.cfg.CallTimeout, context.DeadlineExceeded)
		}
		if err != nil {
			cancel()
			c.Close()
			return nil, err
		}
		stream.close = func() { cancel(); c.Close() }
		a.log.V(1).Info("etcd snapshot stream opened", "endpoint", st.Endpoint, "revision", st.Revision, "bytes", stream.size)
		return &Snapshot{
			ReadCloser:    stream,
			Endpoint:      st.Endpoint,
			MemberID:      st.MemberID,
			Size:          stream.size,
			Revision:      st.Revision,
			Version:       version,
			ServerVersion: st.Version,
		}, nil
	})
}

func (a *Admin) pickSnapshotSource(ctx context.Context, ep string) (EndpointStatus, error) {
	if ep != "" {
		st := a.statusOf(ctx, ep)
		return st, st.Err
	}
	sts := a.Status(ctx)
	best := mostRecent(sts)
	if best < 0 {
		return EndpointStatus{}, &Error{Op: "Snapshot", Kind: ErrNoEndpoint, Err: firstErr(sts), Attempts: 1}
	}
	return sts[best], nil
}

// mostRecent returns the index of the answering endpoint with the highest
// revision, preferring a follower on a tie, or -1.
func mostRecent(sts []EndpointStatus) int {
	best := -1
	for i, s := range sts {
		if s.Err != nil {
			continue
		}
		if best < 0 || s.Revision > sts[best].Revision ||
			(s.Revision == sts[best].Revision && sts[best].IsLeader() && !s.IsLeader()) {
			best = i
		}
	}
	return best
}

// ClusterVersion returns the cluster version (the version all members agree
// to speak, e.g. "3.6.0" while any member still runs 3.6) from the /version
// endpoint of the first configured endpoint that answers.
func (a *Admin) ClusterVersion(ctx context.Context) (string, error) {
	v, err := a.Versions(ctx)
	if err != nil {
		return "", err
	}
	return v.Cluster, nil
}

// Versions is the answer of a member's /version endpoint.
type Versions struct {
	Endpoint string
	Server   string // the member's binary version
	Cluster  string // the cluster version
}

// Versions reads /version from the configured endpoints in order and returns
// the first answer with a decided cluster version, retrying within the budget
// while none has one (ErrVersionNotDecided) or none answers (ErrNoEndpoint).
func (a *Admin) Versions(ctx context.Context) (Versions, error) {
	return retry(ctx, a, "ClusterVersion", "", a.cfg.CallTimeout, func(ctx context.Context) (Versions, error) {
		var last error
		for _, ep := range a.Endpoints() {
			v, err := a.versionsOf(ctx, ep)
			if err == nil {
				return v, nil
			}
			last = err
		}
		var e *Error
		if errors.As(last, &e) {
			return Versions{}, last
		}
		return Versions{}, &Error{Op: "ClusterVersion", Kind: ErrNoEndpoint, Err: last, Attempts: 1}
	})
}

func (a *Admin) versionsOf(ctx context.Context, ep string) (Versions, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.ProbeTimeout)
	defer cancel()
	u := ep
	if !strings.Contains(u, "://") {
		if a.cfg.TLS != nil {
			u = "https://" + u
		} else {
			u = "http://" + u
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u, "/")+"/version", nil)
	if err != nil {
		return Versions{}, err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return Versions{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The status code only: the reason phrase is the member's own text.
		return Versions{}, fmt.Errorf("%s: HTTP %d", req.URL, resp.StatusCode)
	}
	var body struct {
		Server  string `json:"etcdserver"`
		Cluster string `json:"etcdcluster"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body); err != nil {
		return Versions{}, fmt.Errorf("%s: %w", req.URL, err)
	}
	if body.Cluster == "" || body.Cluster == "not_decided" {
		return Versions{}, &Error{Op: "ClusterVersion", Target: ep, Kind: ErrVersionNotDecided, Attempts: 1}
	}
	return Versions{Endpoint: ep, Server: body.Server, Cluster: body.Cluster}, nil
}
