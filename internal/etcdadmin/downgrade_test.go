package etcdadmin_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// etcd's downgrade API against a real 3.6 member: enabling reports the downgrade in
// Status and migrates the storage to 3.5; enabling again to the same minor is success,
// to another is refused; cancelling ends it, and cancelling with none is success.
func TestDowngradeEnableCancel(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 1, etcdtest.OldVersion)
	ctx := timeout(t, 2*time.Minute)
	a := newAdmin(t, c.Endpoints())
	if err := a.EnableDowngrade(ctx, "3.5"); err != nil {
		t.Fatal(err)
	}
	if err := a.EnableDowngrade(ctx, "3.5"); err != nil {
		t.Fatalf("enabling the same downgrade again: %v", err)
	}
	if err := a.EnableDowngrade(ctx, "3.4"); err == nil {
		t.Fatal("a downgrade to 3.4 accepted while one to 3.5 is in progress")
	}
	st := waitStatus(t, a, func(s etcdadmin.EndpointStatus) error {
		if !s.DowngradeEnabled || s.DowngradeTarget != "3.5.0" || s.StorageVersion != "3.5.0" {
			return fmt.Errorf("downgrade %v to %q, storage %q", s.DowngradeEnabled, s.DowngradeTarget, s.StorageVersion)
		}
		return nil
	})
	t.Logf("after enable: downgrade to %s, storage %s", st.DowngradeTarget, st.StorageVersion)
	if err := a.CancelDowngrade(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, a, func(s etcdadmin.EndpointStatus) error {
		if s.DowngradeEnabled {
			return fmt.Errorf("downgrade still enabled to %q", s.DowngradeTarget)
		}
		return nil
	})
	if err := a.CancelDowngrade(ctx); err != nil {
		t.Fatalf("cancelling with none in progress: %v", err)
	}
}

// waitStatus polls the first endpoint's status until ok accepts it.
func waitStatus(t *testing.T, a *etcdadmin.Admin, ok func(etcdadmin.EndpointStatus) error) etcdadmin.EndpointStatus {
	t.Helper()
	var s etcdadmin.EndpointStatus
	// 200 ms: etcd migrates the storage version on its own ticker.
	poll.Eventually(t, 30*time.Second, 200*time.Millisecond, "the member's status", func() error {
		s = a.Status(timeout(t, 5*time.Second))[0]
		if s.Err != nil {
			return s.Err
		}
		return ok(s)
	})
	return s
}
