package framework

import (
	"context"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-operator/etcd-operator/controllers"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// StartShard starts one operator instance of a sharded fleet in this process, as main
// does with --shard-key/--shard: it manages the clusters of its shard only and elects
// its leader on its shard's own Lease (main.go's name, LeaseID). afterAction, when set,
// is its failpoint (etcdcluster.Reconciler's AfterAction), so a test can tell which
// instance acted. Stop the single operator first (StopOperatorNow); the instance stops
// at the end of the test.
func (e *Env) StartShard(shard etcdcluster.Shard, afterAction func(ctx context.Context, cluster string, a planner.Action)) *Replica {
	e.t.Helper()
	name := "shard-" + shard.Value
	logger := crzap.New(crzap.UseDevMode(true), crzap.WriteTo(operatorLog(e.t, e.Bench))).WithValues("instance", name)
	mgr := e.newManager(logger, func(o *ctrl.Options) {
		o.LeaderElection = true
		o.LeaderElectionID = shard.LeaseID(haLeaseID)
		o.LeaderElectionNamespace = haLeaseNamespace
		o.LeaderElectionReleaseOnCancel = true
		o.LeaseDuration = ptr.To(haLeaseDuration)
		o.RenewDeadline = ptr.To(haRenewDeadline)
		o.RetryPeriod = ptr.To(haRetryPeriod)
	}, func(o *controllers.Options) {
		o.Shard = shard
		o.AfterAction = afterAction
	})
	ctx, cancel := context.WithCancel(context.Background())
	r := &Replica{Name: name, mgr: mgr, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := mgr.Start(ctx); err != nil {
			e.t.Errorf("%s stopped: %v", name, err)
		}
	}()
	e.t.Cleanup(r.Kill)
	return r
}

// Client is the instance's own client, which reads from its cache: what the instance
// sees of a cluster.
func (r *Replica) Client() client.Client { return r.mgr.GetClient() }

// WaitLeading waits until every instance leads (each on its own Lease).
func (e *Env) WaitLeading(timeout time.Duration, rs ...*Replica) {
	e.t.Helper()
	for _, r := range rs {
		e.Eventually(timeout, r.Name+" leads its Lease", func() error {
			if !r.Leading() {
				return errNotLeading(r.Name)
			}
			return nil
		})
	}
}

type errNotLeading string

func (e errNotLeading) Error() string { return string(e) + " does not lead" }
