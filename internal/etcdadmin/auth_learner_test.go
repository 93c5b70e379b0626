package etcdadmin_test

import (
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := a.Status(ctx, nm.ClientURL)[0]
		if st.Err == nil && st.IsLearner {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("learner status with auth on: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := a.EnsurePromoted(ctx, res.Member.ID); err != nil {
		t.Fatal(err)
	}
}
