package etcdrestore

import (
	"maps"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Replacing a cluster keeps what chooses who manages it and what selects it: all of the
// replaced cluster's labels, and of its annotations those that pick the operator
// instance (CoreOS's scope annotation, and the shard key's when a fleet is sharded by an
// annotation). Without them a cluster of shard b came back without its key, to the
// default shard, and one scoped to a namespace-wide operator to the cluster-wide one.
// They go into the replaced-cluster record before the delete, so they survive it (and
// an operator restart). The tenant could set all but one of them on the new cluster
// anyway, so those need no signature; the API server judges them when it is created
// (refused: ReasonBackupInvalidSpec with its message). The exception is the shard key:
// a fleet may let only its administrators set it (config/shard-guard), and the operator
// creates the cluster with its own identity, which such a guard lets through; so the
// shard key's label and annotation are carried only from a record the operator signed,
// and a record written or changed by anyone else brings the cluster back without them
// (to the default shard). Other annotations are not
// carried: the operator's own (restore source, pins, markers) belong to the old
// cluster's life, and its settings (pod, Service, etcd flags) are the restore's spec to
// give, as they are for a restore into a new name.

// carriedMeta is what of the replaced cluster's metadata the new cluster gets.
type carriedMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// metaCarried picks old's labels and instance-choosing annotations (shardKey: the
// fleet's --shard-key, "" when not sharded).
func metaCarried(old *etcdv1beta2.EtcdCluster, shardKey string) carriedMeta {
	var m carriedMeta
	if len(old.Labels) > 0 {
		m.Labels = maps.Clone(old.Labels)
	}
	for _, k := range []string{etcdv1beta2.ScopeAnnotation, shardKey} {
		if v, ok := old.Annotations[k]; ok && k != "" {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[k] = v
		}
	}
	return m
}

// carryMeta puts m on the cluster to create. The restore's own annotations win over a
// carried one of the same key (they say what to restore).
func carryMeta(c *etcdv1beta2.EtcdCluster, m carriedMeta) {
	if len(m.Labels) > 0 {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		maps.Copy(c.Labels, m.Labels)
	}
	for k, v := range m.Annotations {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		if _, own := c.Annotations[k]; !own {
			c.Annotations[k] = v
		}
	}
}

// recordedMeta is the metadata the replaced-cluster record carries (none without one),
// without the shard key's label and annotation unless the operator's signature of the
// record verifies.
func (r *Reconciler) recordedMeta(er *etcdv1beta2.EtcdRestore) carriedMeta {
	rc, ok := replacedRecord(er)
	if !ok || r.ShardKey == "" || r.signedRecord(er) {
		return rc.Meta
	}
	m := carriedMeta{Labels: maps.Clone(rc.Meta.Labels), Annotations: maps.Clone(rc.Meta.Annotations)}
	delete(m.Labels, r.ShardKey)
	delete(m.Annotations, r.ShardKey)
	return m
}
