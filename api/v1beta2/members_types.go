package v1beta2

import "k8s.io/apimachinery/pkg/api/resource"

// MemberRole is a member's part in raft: Leader, Follower or Learner.
type MemberRole string

const (
	MemberRoleLeader   MemberRole = "Leader"
	MemberRoleFollower MemberRole = "Follower"
	MemberRoleLearner  MemberRole = "Learner"
)

// MemberDetail is one etcd member as the operator last observed it. Kept beside
// status.members.ready/unready, which CoreOS's clients read, rather than in their place.
type MemberDetail struct {
	// Name of the member (and of its pod); its ID when etcd answers a name that is no
	// DNS label.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// ID is etcd's member ID in hex.
	// +kubebuilder:validation:MaxLength=16
	ID string `json:"id"`
	// Role is Leader, Follower or Learner; empty when the member did not answer and no
	// role was known before.
	// +optional
	Role MemberRole `json:"role,omitempty"`
	// Version is the etcd version the member answered with (the last known one while it
	// does not answer); "unknown" when the answer is no semantic version.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Version string `json:"version,omitempty"`
	// DBSize is the size of the member's database file, rounded down to a whole KiB
	// (below 1 MiB) or MiB; it changes only when the size moved by more than a
	// sixteenth or 64 KiB since the last value shown, so that status follows growth
	// and not etcd's page-by-page noise.
	// +optional
	DBSize *resource.Quantity `json:"dbSize,omitempty"`
	// DBSizeInUse is the part of the database file in use (what a defragmentation keeps),
	// rounded the same way.
	// +optional
	DBSizeInUse *resource.Quantity `json:"dbSizeInUse,omitempty"`
	// Healthy: the member answered its status in the last observation and follows a
	// leader.
	Healthy bool `json:"healthy"`
}

// VersionSince records from which raft index on every entry of the log was written
// while all members ran one minor version: what an upgrade to the next minor needs
// before it may start (etcd 3.7 cannot replay log entries written under 3.5).
type VersionSince struct {
	// Minor is the minor version every member ran ("3.6").
	Minor string `json:"minor"`
	// RaftIndex is the highest raft index any member had reached when the operator first
	// saw every member on Minor with its storage at Minor; 0 when the operator created
	// the cluster on Minor, so every entry is Minor's.
	// +optional
	RaftIndex int64 `json:"raftIndex"`
}
