package etcdadmin

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcd's downgrade API (etcd >= 3.6; the server's version package): a downgrade is
// enabled to exactly one minor below the cluster version, after which the leader lowers
// the cluster version to it and every member migrates its storage to that minor; members
// may then be restarted on the older binary one at a time, and once every member runs
// it, etcd ends the downgrade itself. Cancel ends it early.

// EnableDowngrade enables the downgrade of the cluster to minor ("3.5"). An enabled
// downgrade to the same target (a retry, or an operator restarted after it asked) is
// success; any other refusal is returned with etcd's reason.
func (a *Admin) EnableDowngrade(ctx context.Context, minor string) error {
	_, err := retry(ctx, a, "DowngradeEnable", minor, a.cfg.CallTimeout, func(ctx context.Context) (struct{}, error) {
		_, err := a.client.Downgrade(ctx, clientv3.DowngradeEnable, minor)
		if err != nil && rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCDowngradeInProcess) {
			return struct{}{}, a.downgradeTargetIs(ctx, minor)
		}
		return struct{}{}, err
	})
	return err
}

// downgradeTargetIs checks that the downgrade in progress targets minor: one enabled by
// someone else to another version is not ours to carry on.
func (a *Admin) downgradeTargetIs(ctx context.Context, minor string) error {
	for _, s := range a.Status(ctx) {
		if s.Err != nil || !s.DowngradeEnabled {
			continue
		}
		if v := s.DowngradeTarget; v != "" && !sameMinor(v, minor) {
			return fmt.Errorf("etcd has a downgrade to %s in progress, not to %s", v, minor)
		}
		return nil
	}
	return nil
}

// sameMinor compares "3.5.0" with "3.5" by their MAJOR.MINOR.
func sameMinor(a, b string) bool {
	var am, an, bm, bn int
	if _, err := fmt.Sscanf(a, "%d.%d", &am, &an); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(b, "%d.%d", &bm, &bn); err != nil {
		return false
	}
	return am == bm && an == bn
}

// CancelDowngrade cancels the downgrade in progress; none in progress is success (it may
// have just completed, or an earlier attempt cancelled it).
func (a *Admin) CancelDowngrade(ctx context.Context) error {
	_, err := retry(ctx, a, "DowngradeCancel", "", a.cfg.CallTimeout, func(ctx context.Context) (struct{}, error) {
		_, err := a.client.Downgrade(ctx, clientv3.DowngradeCancel, "")
		if err != nil && rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNoInflightDowngrade) {
			return struct{}{}, nil
		}
		return struct{}{}, err
	})
	return err
}
