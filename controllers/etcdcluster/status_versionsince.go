package etcdcluster

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// status.versionSince: from which raft index on every member ran the current minor, the
// record behind the planner's snapshot gate before a step into etcd 3.7
// (internal/planner/snapshotgate.go).

// recordVersionSince records, once per minor, the raft index by which every member ran
// it: when every member answers on one minor with its storage (etcd ≥ 3.6) raised to it,
// the highest raft index any of them reports. A cluster this operator bootstraps is
// recorded at index 0 on its pods' minor: none of its log is older. Called before
// status.bootstrapped is set by the first member list.
func recordVersionSince(st *etcdv1beta2.EtcdClusterStatus, o planner.Observed) {
	if !o.MembersKnown || len(o.Members) == 0 {
		return
	}
	if !st.Bootstrapped && len(st.BootstrapMembers) > 0 {
		if minor, ok := podsMinor(o.Pods); ok {
			st.VersionSince = &etcdv1beta2.VersionSince{Minor: minor}
		}
		return
	}
	var minor string
	var highest uint64
	for _, m := range o.Members {
		v, err := planner.ParseVersion(m.Version)
		if !m.Reachable || err != nil {
			return
		}
		mm := minorOf(v)
		if minor != "" && mm != minor {
			return
		}
		minor = mm
		if m.StorageVersion != "" {
			sv, err := planner.ParseVersion(m.StorageVersion)
			if err != nil || minorOf(sv) != minor {
				return
			}
		}
		highest = max(highest, m.RaftIndex)
	}
	if st.VersionSince != nil && st.VersionSince.Minor == minor && !logRestarted(st, highest) {
		return
	}
	st.VersionSince = &etcdv1beta2.VersionSince{Minor: minor, RaftIndex: int64(highest)}
}

// logRestarted reports that the members' log is not the one the record was taken on: a
// raft index never goes down within one log, so every member below the recorded index
// means a new log, begun by a restore from backup after total loss or by a quorum-loss
// recovery (internal/restore writes a data directory whose log restarts near index =
// member count). The record is then taken again as for a cluster first seen on the
// minor: at the highest index now, with every member on the minor and its storage raised
// to it. Not 0, though the restored log holds no entry of the old one: its first entries
// were written by members the operator has not yet seen all on the minor with their
// storage raised (the restore seeds a member from the backup's database, whose storage
// version may be older), exactly the case the highest-index record covers; and the
// restored log is short, so the conservative record costs one snapshot-count of writes,
// where the stale one asked for the old log's whole length again.
// Not while a recovery or restore is in progress: the member answering then belongs to
// the cluster being seeded, and an aborted recovery returns to the old log, whose record
// must stay.
func logRestarted(st *etcdv1beta2.EtcdClusterStatus, highest uint64) bool {
	if st.Recovery != nil || st.BackupRestore.InProgress() || st.VersionSince.RaftIndex <= 0 {
		return false
	}
	return highest < uint64(st.VersionSince.RaftIndex)
}

// podsMinor is the one minor version every pod names, if they agree.
func podsMinor(pods []planner.Pod) (string, bool) {
	var minor string
	for _, p := range pods {
		v, err := planner.ParseVersion(p.Version)
		if err != nil || minor != "" && minorOf(v) != minor {
			return "", false
		}
		minor = minorOf(v)
	}
	return minor, minor != ""
}

func minorOf(v planner.Version) string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// versionSinceRecorded is the record as the planner takes it.
func versionSinceRecorded(st *etcdv1beta2.EtcdClusterStatus) *planner.VersionSince {
	if st.VersionSince == nil || st.VersionSince.RaftIndex < 0 {
		return nil
	}
	return &planner.VersionSince{Minor: st.VersionSince.Minor, RaftIndex: uint64(st.VersionSince.RaftIndex)}
}

// podSnapshotCount is the --snapshot-count a member pod's etcd runs with, as etcd takes
// it: its argument (the last one), else ETCD_SNAPSHOT_COUNT (the last entry, which the
// kubelet keeps), else 0 (etcd's default). unread says why it cannot be read off the pod
// (set through valueFrom or possibly envFrom, or not a number), for the snapshot gate to
// hold rather than assume the default.
func podSnapshotCount(p *corev1.Pod) (count uint64, unread string) {
	for _, ct := range p.Spec.Containers {
		if ct.Name != render.ContainerName {
			continue
		}
		arg, argSet := "", false
		for i, a := range ct.Args {
			if v, ok := strings.CutPrefix(a, "--snapshot-count="); ok {
				arg, argSet = v, true
			} else if a == "--snapshot-count" && i+1 < len(ct.Args) {
				arg, argSet = ct.Args[i+1], true
			}
		}
		if argSet {
			return parseCount(arg, "the --snapshot-count argument")
		}
		var env *corev1.EnvVar
		for i := range ct.Env {
			if ct.Env[i].Name == snapshotCountEnv {
				env = &ct.Env[i]
			}
		}
		switch {
		case env != nil && env.ValueFrom != nil:
			return 0, snapshotCountEnv + " is set through valueFrom"
		case env != nil:
			return parseCount(env.Value, snapshotCountEnv)
		}
		for _, from := range ct.EnvFrom {
			if strings.HasPrefix(snapshotCountEnv, from.Prefix) {
				return 0, "the etcd container takes variables from envFrom, which may set " + snapshotCountEnv
			}
		}
	}
	return 0, ""
}

const snapshotCountEnv = "ETCD_SNAPSHOT_COUNT"

// parseCount reads a snapshot count; the value itself is not repeated in the reason.
func parseCount(s, what string) (uint64, string) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, what + " is not a number"
	}
	return n, ""
}
