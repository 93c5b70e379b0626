package etcdadmin_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// With auth on, a learner is probed (status, health) and promoted by the Admin that
// carries the root credentials, also when it was first dialled before it started.
func TestAuthLearnerJoins(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	ctx := timeout(t, 2*time.Minute)
	a, err := etcdadmin.New(etcdadmin.Config{Endpoints: c.Endpoints(), Username: etcdadmin.RootUser, Password: "pw", DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.EnableAuth(ctx, "pw"); err != nil {
		t.Fatal(err)
	}
	nm := c.NewMember("learner", etcdtest.DefaultVersion)
	res, err := a.EnsureLearner(ctx, []string{nm.PeerURL})
	if err != nil {
		t.Fatal(err)
	}
	a.SetEndpoints(append(c.Endpoints(), nm.ClientURL)...)
	if st := a.Status(ctx, nm.ClientURL)[0]; st.Err == nil {
		t.Fatalf("status of a learner not started: %+v", st)
	}
	c.StartJoining(nm, initialCluster(res.Members, res.Member.ID, nm.Name))
	poll.Eventually(t, 30*time.Second, 200*time.Millisecond, "the learner's status with auth on", func() error {
		if st := a.Status(ctx, nm.ClientURL)[0]; st.Err != nil || !st.IsLearner {
			return fmt.Errorf("learner status %+v", st)
		}
		return nil
	})
	if _, err := a.EnsurePromoted(ctx, res.Member.ID); err != nil {
		t.Fatal(err)
	}
}
