package e2e

import (
	"maps"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestDowngrade36To35 takes a 3-member 3.6 cluster down to 3.5 under writes through
// etcd's downgrade API: the operator enables the downgrade, waits for etcd to migrate
// every member's storage, then restarts the members one at a time on 3.5. No write fails,
// no acknowledged write is lost, the members stay the same, and status reports 3.5 on
// every member.
func TestDowngrade36To35(t *testing.T) {
	const name = "down"
	testenv.Etcd(t, testenv.Etcd35Version) // the bench serves the 3.5 image
	e := framework.Setup(t)

	c := newCluster(name, 3)
	c.Spec.Version = "3.6.16"
	e.Create(c)
	e.WaitAvailable(name, 3, 120*time.Second)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, loadRate)
	downgradeUnderLoad(t, e, name, 3, etcd35, load)
	verifyLoad(t, load)
}

// downgradeUnderLoad sets the cluster's spec.version one minor down and waits until
// every member runs it with the cluster Available and load still flowing; the downgrade
// went through etcd's downgrade API (the Downgrading event), the members stay the same,
// and status.members reports the version on every member. Checking the load is the
// caller's (verifyLoad).
func downgradeUnderLoad(t *testing.T, e *framework.Env, name string, size int, to string, load *framework.Load) {
	t.Helper()
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = to })
	e.Eventually(4*time.Minute, "every member runs "+to, func() error {
		return membersRun(e, name, size, to)
	})
	e.WaitAvailable(name, size, 90*time.Second)
	flowing(t, load, loadRate)

	if !framework.HasAny(e.EventReasons(name), etcdv1beta2.ReasonDowngrading) {
		t.Errorf("no %s event: the downgrade did not go through etcd's downgrade API; events %v", etcdv1beta2.ReasonDowngrading, e.EventReasons(name))
	}
	after, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(framework.MemberIDs(before), framework.MemberIDs(after)) {
		t.Errorf("members replaced during the in-place downgrade: %v → %v", framework.MemberIDs(before), framework.MemberIDs(after))
	}
	requireMemberDetails(t, e, name, size, to) // status.members: the version on every member
}
