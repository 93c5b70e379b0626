package framework

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Lease timings of the test replicas: short, so a takeover happens within seconds of a
// kill (production keeps controller-runtime's defaults, 15 s / 10 s / 2 s).
const (
	haLeaseDuration = 6 * time.Second
	haRenewDeadline = 4 * time.Second
	haRetryPeriod   = time.Second
	// haLeaseID is main.go's LeaderElectionID: the replicas contend for the same Lease
	// an installed operator's replicas would.
	haLeaseID = "etcd-operator.etcd.database.coreos.com"
	// haLeaseNamespace holds the Lease on the bench (an installed operator uses its pod's).
	haLeaseNamespace = "default"
)

// Replica is one operator manager of several in this process, electing a leader on a
// Lease as the replicas of an installed operator do.
type Replica struct {
	Name   string
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan struct{}
}

// Leading reports whether this replica won the election and has not been killed.
func (r *Replica) Leading() bool {
	select {
	case <-r.done:
		return false
	default:
	}
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// Kill stops the replica as kill -9 would for the Lease: it is not released (the
// managers run with LeaderElectionReleaseOnCancel off), so another replica takes over
// only once the lease expires. Its reconciles see their context end.
func (r *Replica) Kill() {
	r.cancel()
	<-r.done
}

// Replicas are the operator replicas StartReplicas started.
type Replicas struct {
	e    *Env
	mu   sync.Mutex
	all  []*Replica
	next int
}

// StartReplicas stops the single operator and starts n replicas with leader election;
// they stop at the end of the test. Set the failpoints (AfterAction, AfterBackupStored)
// before, as for StartOperator: every replica runs them.
func (e *Env) StartReplicas(n int) *Replicas {
	e.t.Helper()
	e.StopOperatorNow()
	rs := &Replicas{e: e}
	e.t.Cleanup(rs.stopAll)
	for range n {
		rs.Add()
	}
	return rs
}

// Add starts one more replica.
func (rs *Replicas) Add() *Replica {
	rs.e.t.Helper()
	rs.mu.Lock()
	name := fmt.Sprintf("replica-%d", rs.next)
	rs.next++
	rs.mu.Unlock() // not held while building: a t.Fatalf there runs the cleanup that locks
	logger := crzap.New(crzap.UseDevMode(true), crzap.WriteTo(operatorLog(rs.e.t, rs.e.Bench))).WithValues("replica", name)
	mgr := rs.e.newManager(logger, func(o *ctrl.Options) {
		o.LeaderElection = true
		o.LeaderElectionID = haLeaseID
		o.LeaderElectionNamespace = haLeaseNamespace
		o.LeaderElectionReleaseOnCancel = false
		o.LeaseDuration = ptr.To(haLeaseDuration)
		o.RenewDeadline = ptr.To(haRenewDeadline)
		o.RetryPeriod = ptr.To(haRetryPeriod)
	})
	ctx, cancel := context.WithCancel(context.Background())
	r := &Replica{Name: name, mgr: mgr, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := mgr.Start(ctx); err != nil {
			rs.e.t.Errorf("%s stopped: %v", name, err)
		}
	}()
	rs.mu.Lock()
	rs.all = append(rs.all, r)
	rs.mu.Unlock()
	return r
}

// Leader waits up to timeout for a replica to lead and returns it.
func (rs *Replicas) Leader(timeout time.Duration) *Replica {
	rs.e.t.Helper()
	var leader *Replica
	rs.e.Eventually(timeout, "an operator replica leads", func() error {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		var leading []string
		for _, r := range rs.all {
			if r.Leading() {
				leader = r
				leading = append(leading, r.Name)
			}
		}
		switch len(leading) {
		case 0:
			return fmt.Errorf("no replica leads")
		case 1:
			return nil
		default:
			return fmt.Errorf("%d replicas lead at once: %v", len(leading), leading)
		}
	})
	return leader
}

// KillLeader kills the leading replica, starts a replacement (two replicas again, as a
// Deployment would restore), and returns the replica that took over.
func (rs *Replicas) KillLeader(timeout time.Duration) (killed, next *Replica) {
	rs.e.t.Helper()
	killed = rs.Leader(timeout)
	killed.Kill()
	rs.Add()
	return killed, rs.Leader(timeout)
}

func (rs *Replicas) stopAll() {
	rs.mu.Lock()
	all := rs.all
	rs.mu.Unlock()
	for _, r := range all {
		r.Kill()
	}
}
