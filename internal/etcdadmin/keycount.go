package etcdadmin

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// KeyCount is the number of keys the member at endpoint held at revision (0: its current
// one), read from that member alone (serializable: no quorum needed, as for a snapshot),
// and the member's current revision. Backups record it so that a verification can check a
// restored member against what the cluster held, not against the snapshot itself.
func (a *Admin) KeyCount(ctx context.Context, endpoint string, revision int64) (count, current int64, err error) {
	got, err := retry(ctx, a, "KeyCount", endpoint, a.cfg.CallTimeout, func(actx context.Context) (keyCount, error) {
		o, err := a.dialOne(endpoint)
		if err != nil {
			return keyCount{}, err
		}
		return countKeys(actx, o.client, revision)
	})
	return got.count, got.current, err
}

// CountKeys is KeyCount on a client the caller dialled (e.g. a verification's restored
// member on loopback).
func CountKeys(ctx context.Context, c *clientv3.Client, revision int64) (count, current int64, err error) {
	a, err := countKeys(ctx, c, revision)
	return a.count, a.current, err
}

type keyCount struct{ count, current int64 }

func countKeys(ctx context.Context, c *clientv3.Client, revision int64) (keyCount, error) {
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable()}
	if revision > 0 {
		opts = append(opts, clientv3.WithRev(revision))
	}
	// The empty key with WithPrefix ranges over every key.
	resp, err := c.Get(ctx, "", opts...)
	if err != nil {
		return keyCount{}, err
	}
	return keyCount{resp.Count, resp.Header.Revision}, nil
}
