package restore

// RevisionBump is added to the revision of every restored snapshot, and the bumped
// revision is marked compacted (etcdutl snapshot restore --bump-revision
// --mark-compacted). Watchers of the restored cluster (kube-apiserver's caches, any
// client resuming a watch from the last revision it saw) may hold revisions the
// snapshot never had: writes made after the snapshot was taken, or, in a quorum-loss
// recovery, writes only the lost members applied. Without the bump the restored cluster
// would hand out those revision numbers again for different data, and a resumed watch
// would silently skip or mix events. With it, every new revision is above any the old
// cluster can have issued, and a watch or read at an old revision gets ErrCompacted, so
// clients relist instead of trusting their caches.
//
// The amount is a constant because every member of a new cluster restores the snapshot
// on its own: all of them must arrive at the same revision, so the bump cannot depend on
// the clock or on anything a member sees differently. One billion is what etcd's and
// Kubernetes' restore documentation suggest; it covers more than a day of writes at
// 10,000 per second after the snapshot, far beyond what one etcd cluster sustains, and
// repeated restores leave room for billions more before int64 runs out.
const RevisionBump = 1_000_000_000

// revisionBump is the bump a restore applies: RevisionBump, or none for a verification.
func revisionBump(o Options) uint64 {
	if o.KeepRevisions {
		return 0
	}
	return RevisionBump
}
