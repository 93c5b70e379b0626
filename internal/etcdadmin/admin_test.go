package etcdadmin_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

func newAdmin(t *testing.T, eps []string, mod ...func(*etcdadmin.Config)) *etcdadmin.Admin {
	t.Helper()
	cfg := etcdadmin.Config{Endpoints: eps, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 1})}
	for _, m := range mod {
		m(&cfg)
	}
	a, err := etcdadmin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// threeMembers starts a 3-member cluster of the default version and an Admin of it,
// with a context that ends after d.
func threeMembers(t *testing.T, d time.Duration) (*etcdtest.Cluster, *etcdadmin.Admin, context.Context) {
	t.Helper()
	c := etcdtest.StartCluster(t, 3, etcdtest.DefaultVersion)
	return c, newAdmin(t, c.Endpoints()), timeout(t, d)
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// initialCluster builds --initial-cluster for a member joining with the given
// ID and name, from the member list returned by the add. Members are matched
// by ID: the new one has no name yet.
func initialCluster(ms []etcdadmin.Member, id uint64, name string) string {
	var parts []string
	for _, m := range ms {
		n := m.Name
		if m.ID == id {
			n = name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

func idOf(t *testing.T, ms []etcdadmin.Member, peerURL string) uint64 {
	t.Helper()
	m, ok := etcdadmin.FindByPeerURL(ms, peerURL)
	if !ok {
		t.Fatalf("no member with peer URL %s in %v", peerURL, ms)
	}
	return m.ID
}

// followerOf returns the status of a member that is not the leader. A status probe is
// bounded by 2 s, which a member on a loaded machine can miss: it asks until one answers.
func followerOf(t *testing.T, a *etcdadmin.Admin) etcdadmin.EndpointStatus {
	t.Helper()
	var f etcdadmin.EndpointStatus
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "a follower answers its status", func() error {
		sts := a.Status(context.Background())
		for _, s := range sts {
			if s.Err == nil && s.Leader != 0 && !s.IsLeader() {
				f = s
				return nil
			}
		}
		return fmt.Errorf("no follower answered: %+v", sts)
	})
	return f
}

// statusOfAll returns the status of every endpoint (the configured ones if none are
// given) once each has answered: one probe is bounded by 2 s, which a member on a
// loaded machine can miss, and a test that needs the members' IDs needs every answer.
func statusOfAll(t *testing.T, ctx context.Context, a *etcdadmin.Admin, endpoints ...string) []etcdadmin.EndpointStatus {
	t.Helper()
	var sts []etcdadmin.EndpointStatus
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "every endpoint answers its status", func() error {
		sts = a.Status(ctx, endpoints...)
		for _, s := range sts {
			if s.Err != nil {
				return s.Err
			}
		}
		return nil
	})
	return sts
}

// allHealthy waits until every endpoint (the configured ones if none are given) reports
// healthy. Health is one status probe and one linearizable read, each bounded by 2 s,
// right after a member started, joined or was removed: on a loaded machine a member
// can miss that once (or sit out a short election) and answer the next time.
func allHealthy(t *testing.T, ctx context.Context, a *etcdadmin.Admin, what string, endpoints ...string) []etcdadmin.EndpointHealth {
	t.Helper()
	var hs []etcdadmin.EndpointHealth
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, what, func() error {
		hs = a.Health(ctx, endpoints...)
		for _, h := range hs {
			if !h.Healthy || h.Err != nil || h.MemberID == 0 {
				return fmt.Errorf("health %+v", h)
			}
		}
		return nil
	})
	return hs
}

// peerDropped waits until no member at endpoints counts an active peer connection to
// member id (etcd's etcd_network_active_peers gauge, labelled with both IDs in hex).
func peerDropped(t *testing.T, endpoints []string, id uint64) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	remote := fmt.Sprintf("Remote=%q", etcdadmin.FormatID(id))
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("no live member connected to %s", etcdadmin.FormatID(id)), func() error {
		for _, ep := range endpoints {
			resp, err := hc.Get(ep + "/metrics")
			if err != nil {
				return err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "etcd_network_active_peers{") && strings.Contains(line, remote) && !strings.HasSuffix(line, " 0") {
					return fmt.Errorf("%s: %s", ep, line)
				}
			}
		}
		return nil
	})
}

func countVoters(ms []etcdadmin.Member) (voters, learners int) {
	for _, m := range ms {
		if m.IsLearner {
			learners++
		} else {
			voters++
		}
	}
	return
}

func TestListStatusHealthVersion(t *testing.T) {
	t.Parallel()
	c, a, ctx := threeMembers(t, time.Minute)

	ms, err := a.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("members = %v", ms)
	}
	for _, em := range c.Members {
		m, ok := etcdadmin.FindByPeerURL(ms, em.PeerURL)
		if !ok || m.Name != em.Name || m.IsLearner || !m.Started() || !slices.Equal(m.ClientURLs, []string{em.ClientURL}) || m.ID == 0 {
			t.Fatalf("member %s: got %+v", em.Name, m)
		}
	}

	// Each member's own list names that member as the one answering, and lists all.
	own := a.MemberLists(ctx)
	if len(own) != 3 {
		t.Fatalf("own lists = %+v", own)
	}
	froms := map[uint64]bool{}
	for _, l := range own {
		if l.Err != nil || len(l.Members) != 3 {
			t.Fatalf("own list of %s: %+v", l.Endpoint, l)
		}
		m, ok := etcdadmin.FindByID(ms, l.From)
		if !ok || !slices.Contains(c.Endpoints(), l.Endpoint) || !slices.Contains(m.ClientURLs, l.Endpoint) {
			t.Fatalf("list from %s says it is member %x (%+v)", l.Endpoint, l.From, m)
		}
		froms[l.From] = true
	}
	if len(froms) != 3 {
		t.Fatalf("three endpoints answered as %d members", len(froms))
	}

	// Every member answers, all name the same leader, it alone says so, and Leader()
	// finds it. Asked until they agree: a probe can miss its 2 s bound on a loaded
	// machine, and an election there (a missed heartbeat) changes the leader meanwhile.
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the members agree on one leader, which Leader() finds", func() error {
		sts := a.Status(ctx)
		leaders := 0
		for _, s := range sts {
			if s.Err != nil {
				return fmt.Errorf("status %s: %w", s.Endpoint, s.Err)
			}
			if s.Leader != sts[0].Leader || s.Leader == 0 {
				return fmt.Errorf("members disagree on the leader: %+v", sts)
			}
			if s.IsLeader() {
				leaders++
			}
			if _, ok := etcdadmin.FindByID(ms, s.MemberID); !ok || s.Version != "3.7.3" || s.DBSize <= 0 || s.Revision < 1 || s.RaftIndex == 0 {
				return fmt.Errorf("status %+v", s)
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d endpoints claim leadership: %+v", leaders, sts)
		}
		if id, ep, err := a.Leader(ctx); err != nil || id != sts[0].Leader {
			return fmt.Errorf("Leader() = %x %s %v, want %x", id, ep, err, sts[0].Leader)
		}
		return nil
	})

	allHealthy(t, ctx, a, "every member healthy")

	cv, err := a.ClusterVersion(ctx)
	if err != nil || cv != "3.7.0" {
		t.Fatalf("ClusterVersion = %q, %v", cv, err)
	}

	// A dead endpoint is reported as such, quickly, without hiding the
	// others. (A follower: killing the leader would make all unhealthy for
	// an election.)
	dead := slices.Index(c.Endpoints(), followerOf(t, a).Endpoint)
	c.Members[dead].Kill(t)
	// Every look is quick; it is repeated only while a live member misses its 2 s probe
	// (a loaded machine), never because the dead one answered.
	var hs []etcdadmin.EndpointHealth
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the killed follower unhealthy, the others healthy", func() error {
		start := time.Now()
		hs = a.Health(ctx)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("health with a dead member took %v", took)
		}
		if hs[dead].Healthy {
			t.Fatalf("health[%d] = %+v: the killed member reported healthy", dead, hs[dead])
		}
		for i, h := range hs {
			if want := i != dead; h.Healthy != want {
				return fmt.Errorf("health[%d] = %+v, want healthy=%v", i, h, want)
			}
		}
		return nil
	})
	if !etcdadmin.IsTransient(hs[dead].Err) || !strings.Contains(hs[dead].Err.Error(), "connection refused") {
		t.Fatalf("dead endpoint error should be transient and say why: %v", hs[dead].Err)
	}
}

// add learner → start → promote, with idempotent retries by a "restarted"
// operator, and the errors a controller must be able to tell apart.
func TestLearnerAddStartPromote(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3, etcdtest.DefaultVersion)
	ctx := timeout(t, 2*time.Minute)
	nm := c.NewMember("m3", "")

	a1 := newAdmin(t, c.Endpoints())
	res, err := a1.EnsureLearner(ctx, []string{nm.PeerURL})
	if err != nil {
		t.Fatal(err)
	}
	if res.Existing || res.Member.ID == 0 || !res.Member.IsLearner || res.Member.Name != "" || len(res.Members) != 4 {
		t.Fatalf("EnsureLearner = %+v", res)
	}
	if m, ok := etcdadmin.FindByID(res.Members, res.Member.ID); !ok || !m.IsLearner || m.Started() {
		t.Fatalf("new learner in the response list: %+v %v", m, ok)
	}
	a1.Close()

	// The operator restarts before recording the ID: it finds the same member.
	a2 := newAdmin(t, c.Endpoints())
	again, err := a2.EnsureLearner(ctx, []string{nm.PeerURL})
	if err != nil || !again.Existing || again.Member.ID != res.Member.ID {
		t.Fatalf("second EnsureLearner = %+v, %v; want existing %x", again, err, res.Member.ID)
	}
	// The raw add is not idempotent and says why.
	if _, err := a2.MemberAddAsLearner(ctx, []string{nm.PeerURL}); !errors.Is(err, etcdadmin.ErrPeerURLExists) || etcdadmin.IsTransient(err) {
		t.Fatalf("duplicate add: %v", err)
	}
	// etcd allows one learner by default.
	other := c.NewMember("m4", "")
	if _, err := a2.MemberAddAsLearner(ctx, []string{other.PeerURL}); !errors.Is(err, etcdadmin.ErrTooManyLearners) {
		t.Fatalf("second learner: %v", err)
	}
	if _, err := a2.MemberAddAsLearner(ctx, []string{"127.0.0.1:2380"}); !errors.Is(err, etcdadmin.ErrInvalidPeerURL) {
		t.Fatalf("bad URL: %v", err)
	}

	// Promoting a learner that has not started cannot succeed: with a short
	// budget the error says so and is transient.
	short := newAdmin(t, c.Endpoints(), func(c *etcdadmin.Config) { c.Retry.Budget = 1500 * time.Millisecond })
	_, err = short.MemberPromote(ctx, res.Member.ID)
	var ae *etcdadmin.Error
	if !errors.Is(err, etcdadmin.ErrLearnerNotReady) || !etcdadmin.IsTransient(err) || !errors.As(err, &ae) || ae.Attempts < 2 {
		t.Fatalf("promote of a stopped learner: %v", err)
	}
	t.Logf("as expected: %v", err)

	c.StartJoining(nm, initialCluster(res.Members, res.Member.ID, nm.Name))
	// A started learner is healthy (it follows the leader) but is no voter. (Asked until
	// it answers: a member that has just joined a loaded machine can miss a 2 s probe.)
	if h := allHealthy(t, ctx, a2, "the started learner healthy", nm.ClientURL)[0]; h.MemberID != res.Member.ID {
		t.Fatalf("learner health %+v", h)
	}
	if st := statusOfAll(t, ctx, a2, nm.ClientURL)[0]; !st.IsLearner || st.IsLeader() {
		t.Fatalf("learner status %+v", st)
	}
	start := time.Now()
	ms, err := a2.EnsurePromoted(ctx, res.Member.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("promoted %v after start", time.Since(start))
	if v, l := countVoters(ms); v != 4 || l != 0 {
		t.Fatalf("after promote: %d voters %d learners: %v", v, l, ms)
	}
	// Idempotent: promoting a voter again is success; the raw call says why not.
	if _, err := a2.EnsurePromoted(ctx, res.Member.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a2.MemberPromote(ctx, res.Member.ID); !errors.Is(err, etcdadmin.ErrMemberNotLearner) {
		t.Fatalf("promote of a voter: %v", err)
	}
	if _, err := a2.EnsurePromoted(ctx, 0xdead); !errors.Is(err, etcdadmin.ErrMemberNotFound) {
		t.Fatalf("promote of an unknown ID: %v", err)
	}
	ms, err = a2.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := etcdadmin.FindByID(ms, res.Member.ID); m.Name != "m3" || !m.Started() {
		t.Fatalf("promoted member after start: %+v", m)
	}
	a2.SetEndpoints(c.Endpoints()...)
	allHealthy(t, ctx, a2, "every member healthy after the promotion")
}

// Leadership is moved off a member before it is removed; the admin finds the
// leader even when it is not among its endpoints.
func TestMoveLeaderThenRemoveOldLeader(t *testing.T) {
	t.Parallel()
	c, a, ctx := threeMembers(t, 2*time.Minute)

	oldLeader, leaderEP, err := a.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var followerEPs []string
	for _, ep := range c.Endpoints() {
		if ep != leaderEP {
			followerEPs = append(followerEPs, ep)
		}
	}
	// An admin that only knows the followers must still reach the leader.
	fa := newAdmin(t, followerEPs)
	target := statusOfAll(t, ctx, a, followerEPs[0])[0].MemberID
	if err := fa.MoveLeader(ctx, target); err != nil {
		t.Fatal(err)
	}
	// MoveLeader returns once the old leader follows the target; the third member learns
	// of the new term with the target's next message, and Leader() asks every member
	// (each probe bounded by 2 s): on a loaded machine one look can come too early.
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("Leader() finds the new leader %x", target), func() error {
		if id, _, err := a.Leader(ctx); err != nil || id != target {
			return fmt.Errorf("leader after move = %x, %v", id, err)
		}
		return nil
	})
	// Moving to the current leader is a no-op.
	if err := a.MoveLeader(ctx, target); err != nil {
		t.Fatal(err)
	}
	if err := a.MoveLeader(ctx, 0xdead); !errors.Is(err, etcdadmin.ErrMemberNotFound) {
		t.Fatalf("move to unknown: %v", err)
	}

	ms, err := a.EnsureRemoved(ctx, oldLeader)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := etcdadmin.FindByID(ms, oldLeader); ok || len(ms) != 2 {
		t.Fatalf("after remove: %v", ms)
	}
	// Removing it again is success for the idempotent form only.
	if _, err := a.EnsureRemoved(ctx, oldLeader); err != nil {
		t.Fatal(err)
	}
	if _, err := a.MemberRemove(ctx, oldLeader); !errors.Is(err, etcdadmin.ErrMemberNotFound) || etcdadmin.IsTransient(err) {
		t.Fatalf("raw remove of a removed member: %v", err)
	}
	a.SetEndpoints(followerEPs...)
	if _, err := a.Client().Put(ctx, "k", "v"); err != nil {
		t.Fatalf("write after removing the old leader: %v", err)
	}
}

func TestRemoveKilledMember(t *testing.T) {
	t.Parallel()
	c, a, ctx := threeMembers(t, 2*time.Minute)
	ms, err := a.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Kill the leader: the harder case, the survivors must elect first.
	leader, leaderEP, err := a.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Member(leaderEP).Kill(t)
	got, err := a.EnsureRemoved(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(ms) != 3 {
		t.Fatalf("members after remove: %v", got)
	}
	a.SetEndpoints(c.Endpoints()...)
	allHealthy(t, ctx, a, "both survivors healthy after the removal")
	if _, err := a.Client().Put(ctx, "after", "remove"); err != nil {
		t.Fatal(err)
	}
}

// etcd refuses MemberAdd with "unhealthy cluster" while a listed member is
// down. The add waits within its budget and succeeds once the dead member is
// removed; without that it fails with a clear, transient error.
func TestAddWhileDeadMemberListed(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3, etcdtest.DefaultVersion)
	ctx := timeout(t, 2*time.Minute)
	plain := newAdmin(t, c.Endpoints())
	ms, err := plain.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A follower, so that the cluster keeps its leader and the error below is
	// certainly "unhealthy cluster", not an election's.
	dead := c.Member(followerOf(t, plain).Endpoint)
	deadID := idOf(t, ms, dead.PeerURL)
	dead.Kill(t)
	alive := c.Endpoints()
	// etcd refuses the add because the member asked no longer has a connection to the
	// dead one; it notices when its peer streams end, which on a loaded machine can come
	// after the add below is sent (and then the add is rightly accepted, which is not
	// the case under test). Each live member must have noticed first.
	peerDropped(t, alive, deadID)

	// Gives up after its budget, naming the cause.
	short := newAdmin(t, alive, func(c *etcdadmin.Config) { c.Retry.Budget = 2 * time.Second })
	nm := c.NewMember("m3", "")
	_, err = short.MemberAdd(ctx, []string{nm.PeerURL})
	if !errors.Is(err, etcdadmin.ErrUnhealthyCluster) || !etcdadmin.IsTransient(err) || !strings.Contains(err.Error(), "unhealthy") {
		t.Fatalf("MemberAdd with a dead member listed: %v", err)
	}
	t.Logf("as expected: %v", err)

	// A caller that asked for it gets the refusal on the first attempt, not after
	// waiting the whole budget (the budget here is long enough to tell).
	var asked *etcdadmin.Error
	_, err = plain.MemberAddAsLearner(etcdadmin.WithoutRetryOn(ctx, etcdadmin.ErrUnhealthyCluster), []string{nm.PeerURL})
	if !errors.Is(err, etcdadmin.ErrUnhealthyCluster) || !errors.As(err, &asked) || asked.Attempts != 1 {
		t.Fatalf("MemberAddAsLearner without retry on unhealthy cluster: %v (attempts %+v)", err, asked)
	}

	// Now an add that is retrying when the dead member gets removed.
	var unhealthySeen atomic.Int32
	sawRetry := make(chan struct{}, 1)
	tl := testr.NewWithOptions(t, testr.Options{Verbosity: 1})
	log := funcr.New(func(prefix, args string) {
		tl.Info(args)
		if strings.Contains(args, "retrying") && strings.Contains(args, "unhealthy") {
			if unhealthySeen.Add(1) == 1 {
				sawRetry <- struct{}{}
			}
		}
	}, funcr.Options{Verbosity: 1})
	patient := newAdmin(t, alive, func(c *etcdadmin.Config) { c.Log = log })
	type result struct {
		res etcdadmin.AddResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := patient.MemberAddAsLearner(ctx, []string{nm.PeerURL})
		done <- result{r, err}
	}()
	select {
	case <-sawRetry:
	case r := <-done:
		t.Fatalf("add finished before any retry: %+v", r)
	case <-ctx.Done():
		t.Fatal("no retry observed")
	}
	if _, err := plain.EnsureRemoved(ctx, deadID); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("add after the dead member was removed: %v", r.err)
	}
	if _, ok := etcdadmin.FindByID(r.res.Members, deadID); ok || len(r.res.Members) != 3 || !r.res.Member.IsLearner {
		t.Fatalf("add result: %+v", r.res)
	}
	c.StartJoining(nm, initialCluster(r.res.Members, r.res.Member.ID, nm.Name))
	if _, err := plain.EnsurePromoted(ctx, r.res.Member.ID); err != nil {
		t.Fatal(err)
	}
}

// A streamed snapshot restores with etcdutl into a working one-member
// cluster holding every key.
func TestSnapshotRestore(t *testing.T) {
	t.Parallel()
	c, a, ctx := threeMembers(t, 2*time.Minute)

	const n = 300
	want := map[string]string{}
	var lastRev int64
	for i := range n {
		k, v := fmt.Sprintf("/data/%04d", i), strings.Repeat(fmt.Sprint(i), 50)
		r, err := a.Client().Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		want[k], lastRev = v, r.Header.Revision
	}

	// The storage version (sent with the snapshot) is written once the
	// cluster version is decided, a few seconds after start. And every member
	// must hold the last write: it was acknowledged once applied by the member
	// that served it, and the snapshot comes from the member with the highest
	// revision among those that answer a status probe (bounded by 2 s), which
	// on a loaded machine may be a follower that has not applied it yet.
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("every member at storage version 3.7.0 and revision %d", lastRev), func() error {
		sts := a.Status(ctx)
		if slices.ContainsFunc(sts, func(s etcdadmin.EndpointStatus) bool {
			return s.Err != nil || s.StorageVersion != "3.7.0" || s.Revision < lastRev
		}) {
			return fmt.Errorf("status %+v", sts)
		}
		return nil
	})
	snap, err := a.Snapshot(ctx, etcdadmin.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision < lastRev || snap.Version != "3.7.0" || snap.ServerVersion != "3.7.3" || snap.MemberID == 0 {
		t.Fatalf("snapshot meta: rev %d (want >= %d) version %q server %q member %x", snap.Revision, lastRev, snap.Version, snap.ServerVersion, snap.MemberID)
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	written, err := io.Copy(f, snap)
	if cerr := snap.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Logf("snapshot from %s: %d bytes, revision >= %d", snap.Endpoint, written, snap.Revision)

	lg := zap.NewNop()
	st, err := snapshot.NewV3(lg).Status(path)
	if err != nil || st.Revision < lastRev {
		t.Fatalf("snapshot status %+v, %v", st, err)
	}

	restored := c.NewMember("restored", "")
	err = snapshot.NewV3(lg).Restore(snapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                restored.Name,
		OutputDataDir:       restored.DataDir,
		PeerURLs:            []string{restored.PeerURL},
		InitialCluster:      restored.Name + "=" + restored.PeerURL,
		InitialClusterToken: "restored",
	})
	if err != nil {
		t.Fatal(err)
	}
	c.StartFromDataDir(restored, restored.Name+"="+restored.PeerURL)

	ra := newAdmin(t, []string{restored.ClientURL})
	ms, err := ra.MemberList(ctx)
	if err != nil || len(ms) != 1 || ms[0].Name != restored.Name {
		t.Fatalf("restored members %v, %v", ms, err)
	}
	got, err := ra.Client().Get(ctx, "/data/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != n {
		t.Fatalf("restored %d keys, want %d", len(got.Kvs), n)
	}
	for _, kv := range got.Kvs {
		if want[string(kv.Key)] != string(kv.Value) {
			t.Fatalf("key %s has a wrong value", kv.Key)
		}
	}

	// A snapshot from an explicitly chosen member, and a truncated stream is
	// detected by the restore's hash check.
	ep := c.Members[1].ClientURL
	s2, err := a.Snapshot(ctx, etcdadmin.SnapshotOptions{Endpoint: ep})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Endpoint != ep {
		t.Fatalf("snapshot from %s, asked %s", s2.Endpoint, ep)
	}
	b, err := io.ReadAll(s2)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.db")
	if err := os.WriteFile(bad, b[:len(b)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	err = snapshot.NewV3(lg).Restore(snapshot.RestoreConfig{
		SnapshotPath: bad, Name: "x", OutputDataDir: filepath.Join(t.TempDir(), "x"),
		PeerURLs: []string{"http://127.0.0.1:1"}, InitialCluster: "x=http://127.0.0.1:1", InitialClusterToken: "x",
	})
	if err == nil {
		t.Fatal("restore of a truncated snapshot succeeded")
	}
}

// A 3.6 cluster is administered by the 3.7 client, and a 3.7 member joins it
// as a learner and is promoted (the first step of an upgrade by replacement).
func TestMixedVersion(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3, etcdtest.OldVersion)
	ctx := timeout(t, 2*time.Minute)
	a := newAdmin(t, c.Endpoints())
	if cv, err := a.ClusterVersion(ctx); err != nil || cv != "3.6.0" {
		t.Fatalf("cluster version %q, %v", cv, err)
	}
	nm := c.NewMember("new", etcdtest.DefaultVersion)
	res, err := a.EnsureLearner(ctx, []string{nm.PeerURL})
	if err != nil {
		t.Fatal(err)
	}
	c.StartJoining(nm, initialCluster(res.Members, res.Member.ID, nm.Name))
	if _, err := a.EnsurePromoted(ctx, res.Member.ID); err != nil {
		t.Fatal(err)
	}
	// The promotion is committed when EnsurePromoted returns; the new member reports it
	// once it has applied that entry itself, which under load can come a little later.
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the new member reports its promotion", func() error {
		st := a.Status(ctx, nm.ClientURL)[0]
		if st.Err != nil || st.Version != "3.7.3" || st.IsLearner || st.MemberID != res.Member.ID {
			return fmt.Errorf("new member status %+v", st)
		}
		return nil
	})
	a.SetEndpoints(nm.ClientURL)
	if v, err := a.Versions(ctx); err != nil || v.Server != "3.7.3" || v.Cluster != "3.6.0" {
		t.Fatalf("versions %+v, %v", v, err)
	}
}

// Without quorum, linearizable calls fail with a transient error, while a
// survivor still tells its view of the membership.
func TestQuorumLoss(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3, etcdtest.DefaultVersion)
	ctx := timeout(t, time.Minute)
	a := newAdmin(t, c.Endpoints(), func(c *etcdadmin.Config) { c.Retry.Budget = 3 * time.Second })
	before, err := a.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Members[0].Kill(t)
	c.Members[1].Kill(t)
	survivor := c.Members[2].ClientURL

	_, err = a.MemberList(ctx)
	if err == nil || !etcdadmin.IsTransient(err) {
		t.Fatalf("MemberList without quorum: %v", err)
	}
	t.Logf("as expected: %v", err)
	ms, err := a.MemberListFrom(ctx, survivor)
	if err != nil || len(ms) != len(before) {
		t.Fatalf("MemberListFrom survivor: %v, %v", ms, err)
	}
	ms, err = a.MemberListSerializable(ctx)
	if err != nil || len(ms) != len(before) {
		t.Fatalf("MemberListSerializable: %v, %v", ms, err)
	}
	if _, err := a.MemberListFrom(ctx, c.Members[0].ClientURL); err == nil || !etcdadmin.IsTransient(err) {
		t.Fatalf("MemberListFrom a dead member: %v", err)
	}
	// The survivor loses its leader after an election timeout.
	poll.Eventually(t, 30*time.Second, 200*time.Millisecond, "the survivor of a lost quorum reports unhealthy", func() error {
		h := a.Health(ctx, survivor)[0]
		if h.Healthy {
			return fmt.Errorf("health %+v", h)
		}
		t.Logf("survivor unhealthy as expected: %v", h.Err)
		return nil
	})
	if _, _, err := a.Leader(ctx); !errors.Is(err, etcdadmin.ErrNoLeader) {
		t.Fatalf("Leader without quorum: %v", err)
	}
}

// Everything works over TLS with client certificates, including the
// per-endpoint calls and the HTTPS /version probe.
func TestTLS(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartClusterWithOptions(t, 3, etcdtest.Options{TLS: true})
	ctx := timeout(t, 2*time.Minute)
	a := newAdmin(t, c.Endpoints(), func(cfg *etcdadmin.Config) { cfg.TLS = c.ClientTLS() })
	ms, err := a.MemberList(ctx)
	if err != nil || len(ms) != 3 || !strings.HasPrefix(ms[0].PeerURLs[0], "https://") {
		t.Fatalf("members %v, %v", ms, err)
	}
	for _, h := range a.Health(ctx) {
		if !h.Healthy {
			t.Fatalf("health %+v", h)
		}
	}
	if cv, err := a.ClusterVersion(ctx); err != nil || cv != "3.7.0" {
		t.Fatalf("cluster version %q, %v", cv, err)
	}
	leader, _, err := a.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var to uint64
	for _, m := range ms {
		if m.ID != leader {
			to = m.ID
		}
	}
	if err := a.MoveLeader(ctx, to); err != nil {
		t.Fatal(err)
	}
	snap, err := a.Snapshot(ctx, etcdadmin.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, snap)
	snap.Close()
	if err != nil || n == 0 {
		t.Fatalf("snapshot over TLS: %d bytes, %v", n, err)
	}

	// Without the client certificate nothing is served.
	noCert := c.ClientTLS()
	noCert.Certificates = nil
	b := newAdmin(t, c.Endpoints(), func(cfg *etcdadmin.Config) {
		cfg.TLS = noCert
		cfg.Retry.Budget = time.Second
	})
	_, err = b.MemberList(ctx)
	if err == nil {
		t.Fatal("member list without a client certificate succeeded")
	}
	// The reason is named, not just "deadline exceeded".
	if !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("error does not name the TLS problem: %v", err)
	}
	if !etcdadmin.IsTLSError(err) {
		t.Errorf("IsTLSError(%v) = false", err)
	}
	// A client that does not trust the members' CA.
	untrusting := c.ClientTLS()
	untrusting.RootCAs = x509.NewCertPool()
	u := newAdmin(t, c.Endpoints(), func(cfg *etcdadmin.Config) {
		cfg.TLS = untrusting
		cfg.Retry.Budget = time.Second
	})
	if _, err := u.MemberList(ctx); err == nil || !etcdadmin.IsTLSError(err) {
		t.Errorf("member list with an untrusted CA: %v; want a TLS error", err)
	}
	h := b.Health(ctx)[0]
	if h.Healthy || !strings.Contains(h.Err.Error(), "certificate required") {
		t.Fatalf("health without a client certificate: %+v", h)
	}
}
