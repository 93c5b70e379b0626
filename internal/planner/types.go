package planner

import (
	"fmt"
	"strconv"
	"time"
)

// Defaults used when the matching Desired field is zero. They are exported
// so the controller and the docs can quote them.
const (
	// DefaultReplaceUnhealthyAfter is how long a member may be unreachable
	// while its pod still exists (crash-looping, node not ready, running but
	// not answering, DNS not yet resolvable) before it is replaced. It is far
	// longer than the ~30 s a joining etcd retries an unresolvable peer name,
	// so DNS lag alone can never trigger a replacement.
	DefaultReplaceUnhealthyAfter = 90 * time.Second
	// DefaultReplaceGoneAfter is how long a member may be unreachable once
	// its process is certainly gone (pod missing, Failed/Succeeded, being
	// deleted) before it is replaced. Short, because waiting cannot help and
	// the design asks for failover in seconds; not zero, because the pod and
	// member lists are read at slightly different moments.
	DefaultReplaceGoneAfter = 10 * time.Second
	// DefaultQuorumLossGrace is how long a quorum must stay lost before the
	// planner reports QuorumLost (or, with the opt-in, forces a new
	// cluster). Elections and rolling restarts lose quorum for seconds.
	DefaultQuorumLossGrace = 5 * time.Minute
	// DefaultLearnerTimeout bounds one scale-up step (learner added → pod
	// started → caught up → promoted). Past it the learner is removed and
	// the step is retried under a new name.
	DefaultLearnerTimeout = 5 * time.Minute
	// DefaultPromoteMaxLag is the largest raft-index gap between the leader
	// and a learner at which the learner counts as caught up.
	DefaultPromoteMaxLag uint64 = 1000
	// DefaultRecoveryTimeout bounds a quorum-loss recovery from the decision
	// to the new member serving. Past it the attempt is abandoned (the old
	// members are still untouched) and a new one may start.
	DefaultRecoveryTimeout = 10 * time.Minute
)

// Desired is the part of the cluster spec the planner needs. The controller
// translates the custom resource into it.
type Desired struct {
	// ClusterName prefixes every generated member name.
	ClusterName string
	// Size is the number of voting members wanted (>= 1); 0 hibernates (hibernate.go).
	Size int
	// DataOnClaims: the spec gives members claims (spec.pod.persistentVolumeClaimSpec), so
	// their data outlives their pods; hibernation needs it.
	DataOnClaims bool
	// Version is the etcd version wanted ("3.7.3"; a leading "v" is ignored).
	Version string
	// Paused stops all actions.
	Paused bool
	// Image is the etcd container image for Version (repository included). A
	// bootstrap that never formed has its pods' images corrected to it.
	Image string
	// QuorumLossRecovery opts in to ForceNewCluster after a lasting quorum
	// loss. Without it a lost quorum is only reported.
	QuorumLossRecovery bool
	// RestoreFromBackup opts in to RestoreFromBackup after a lasting total loss (see
	// totalloss.go). Without it a total loss is only reported.
	RestoreFromBackup bool

	// Zero values below mean "use the Default* constant".
	ReplaceUnhealthyAfter time.Duration
	ReplaceGoneAfter      time.Duration
	QuorumLossGrace       time.Duration
	LearnerTimeout        time.Duration
	PromoteMaxLag         uint64
	RecoveryTimeout       time.Duration

	// Maintenance: defragmentation and NOSPACE/CORRUPT remediation (maintenance.go).
	Maintenance MaintenanceSpec

	// PeerTLS, ClientTLS: the spec wants peer / client traffic over TLS (a peer / server
	// Secret is named). Compared with what the pods run, they tell a rotation of the
	// Secrets from a change of scheme (tls.go).
	PeerTLS, ClientTLS bool

	// UpgradeBackup is the cluster's choice of a backup before each minor upgrade
	// step (upgradebackup.go).
	UpgradeBackup UpgradeBackupMode
}

// Observed is everything the controller saw in one reconcile, plus the few
// facts it recorded earlier (Bootstrapped, BootstrapMembers, Pending and the
// *Since timestamps). The planner never reads a clock: Now is an input.
type Observed struct {
	Now time.Time

	// Bootstrapped is true once the controller has ever seen the cluster
	// formed (a MemberList answered). It is recorded in status so a later
	// total outage is never mistaken for "not created yet".
	Bootstrapped bool
	// BootstrapMembers are the initial member names recorded before the
	// bootstrap pods were created, so an interrupted bootstrap can be
	// completed with the same initial cluster.
	BootstrapMembers []string

	// MembersKnown is true when some endpoint answered MemberList (a
	// serializable list is fine; it is answered without quorum).
	MembersKnown bool
	Members      []Member
	// MemberLists are the member lists as each reachable member sees them
	// (a serializable list asked of that member alone), keyed by the ID the
	// answering member gave. Members above is one list; these are the
	// witnesses a pod's deletion as an orphan needs: a majority of the voters
	// must each list no member for the pod.
	MemberLists []MemberList
	// LeaderID is the leader as reported by reachable members (0 = unknown).
	LeaderID uint64
	// Answers are what each member that answered Status said of its cluster (fork.go).
	Answers []ClusterAnswer
	// ForkSince is when the controller first saw the answering members disagree,
	// continuously since (zero: not seen, or not yet recorded).
	ForkSince time.Time

	// Pods are the member pods of this cluster (selected by label).
	Pods []Pod
	// NoNodeToLeaveTo: some pod is on a cordoned node and the controller found no
	// other Ready, schedulable node a new member's pod could be placed on, so moving
	// the member off would only strand its replacement (cordon.go).
	NoNodeToLeaveTo bool

	// Pending is the learner the controller added (MemberAdd answered) and
	// has not yet seen promoted. Its ID comes from the MemberAdd response
	// because a learner that has not started has an empty name in MemberList.
	Pending *PendingMember

	// NameSeed makes generated names vary between clusters while keeping
	// Plan deterministic (the controller passes e.g. the resource UID).
	// Names are derived from NameSeed and Now, so two attempts at different
	// times never propose the same name even if nobody remembered the first.
	NameSeed string
	// Claims are the names of the members' data claims (PersistentVolumeClaims named
	// after their member) that exist and are not being deleted. A member whose pod is
	// missing but whose claim exists gets its pod back, same name, same data, same
	// member ID, instead of being replaced.
	Claims []string
	// UnboundClaims are those of Claims that were never bound to a volume (phase
	// Pending): they never held data.
	UnboundClaims []string
	// KnownMembers are the member names the controller last recorded (status); with no
	// member list at all, they say which claims belong to members.
	KnownMembers []string
	// RecordedVersion is the lowest version the members ran when the controller last saw
	// them answer (status.currentVersion, kept while none answers): what members put back
	// on their claims with no member to ask (after hibernation or the loss of every pod)
	// restart on, whatever spec.version says meanwhile ("" when never recorded).
	RecordedVersion string

	// Recovery is the quorum-loss recovery the controller recorded when it
	// executed ForceNewCluster; nil when none is in progress. While it is set,
	// Members and LeaderID describe the new cluster only (the controller dials
	// only the recovering member), and Pods are all pods, old and new.
	Recovery *Recovery

	// RetiredNames are names of removed members, which must never be reused
	// (their data and DNS records may linger). Optional: generated names
	// already avoid every name visible in Members, Pods and Pending.
	RetiredNames []string

	// Space: alarms, the recorded maintenance run and whether a scheduled one is
	// due (maintenance.go).
	Space SpaceObserved
	// BackupRestore is the restore from backup the controller recorded when it executed
	// RestoreFromBackup and that has not finished; nil otherwise.
	BackupRestore *BackupRestore
	// Backup is the newest backup a total-loss restore could use, as the controller
	// found it (only looked for while no member answers and no pod exists); nil if none.
	Backup *BackupCandidate
	// BackupProblems say why EtcdBackups or their objects were passed over (unreadable,
	// refused credentials, a listing that timed out), for the total-loss messages.
	BackupProblems []string
	// TLSRefused is why a rotation of the TLS Secrets (pods on other Secrets than the
	// spec's, the schemes unchanged) is not safe: the controller's proof that old and
	// new certificates trust each other both ways failed (internal/tlsproof). "" when
	// proven or when no rotation is pending.
	TLSRefused string
	// VersionSince is, as the controller recorded it, from which raft index on every
	// member ran one minor version (snapshotgate.go); nil when not recorded.
	VersionSince *VersionSince
	// UpgradeBackup is the backup before a minor step to Desired.Version: its
	// configured target and the one-shot backup's state (upgradebackup.go); nil: no
	// target and none taken.
	UpgradeBackup *UpgradeBackup
	// AllLostSince is when the controller first saw no member answer and no member pod
	// or claim exist, continuously since (zero: not seen, or not yet recorded, and the
	// grace starts at Now).
	AllLostSince time.Time
	// Downgrade is etcd's downgrade in progress as the members report it; nil: none
	// reported (downgrade.go).
	Downgrade *Downgrade
}

// Member is one entry of etcd's MemberList, joined with that member's own
// Status answer.
type Member struct {
	ID        uint64
	Name      string // empty until the member has started and published it
	PeerURLs  []string
	IsLearner bool

	// Reachable: the member answered Status in this observation.
	Reachable bool
	// RaftIndex, Revision and Version come from that Status answer.
	RaftIndex uint64
	// AppliedIndex is the last raft entry the member applied (Status too): etcd takes a
	// raft snapshot to disk whenever it has applied more than its --snapshot-count entries
	// since the last one (snapshotgate.go).
	AppliedIndex uint64
	Revision     int64
	Version      string
	// StorageVersion is the schema version of the member's database (etcd >= 3.6
	// reports it; empty before): etcd raises it to the cluster's minor only after every
	// member runs that minor, and a member of the next minor does not start on storage
	// two minors behind (3.7 panics on a database still at 3.5).
	StorageVersion string
	// LeaderUnknown: the member answered Status but names no leader. A
	// member restarted a moment ago serves Status before it has heard from
	// the leader; restarting another member then could leave the leader
	// without a working quorum.
	LeaderUnknown bool
	// DBSize, DBSizeInUse and DBQuota come from that Status answer too: the
	// backend's size (what etcd compares with its quota), the part of it in
	// use (what a defragmentation keeps) and quota-backend-bytes (0 from etcd
	// < 3.6).
	DBSize, DBSizeInUse, DBQuota int64

	// UnhealthySince is when the controller first saw this member
	// unreachable or without a pod (zero when it is fine, or not yet
	// recorded: the planner then starts the grace at Now).
	UnhealthySince time.Time
}

// MemberList is one member's own answer to MemberList.
type MemberList struct {
	// From is the ID of the member that answered; ClusterID the cluster its response
	// header named (0: not known).
	From      uint64
	ClusterID uint64
	Members   []Member
}

// nameSeed is the input of generated names: the seed plus the time, so a
// learner abandoned and forgotten is never re-proposed under its old name.
func (o Observed) nameSeed() string {
	return o.NameSeed + "@" + strconv.FormatInt(o.Now.UnixNano(), 36)
}

// PodPhase mirrors the Kubernetes pod phase.
type PodPhase string

// Pod phases.
const (
	PodPending   PodPhase = "Pending"
	PodRunning   PodPhase = "Running"
	PodSucceeded PodPhase = "Succeeded"
	PodFailed    PodPhase = "Failed"
	PodUnknown   PodPhase = "Unknown"
)

// Pod is one member pod.
type Pod struct {
	Name string
	// MemberID is the member-ID annotation (0 when absent: bootstrap pods
	// learn their ID only after the cluster forms).
	MemberID     uint64
	Phase        PodPhase
	Ready        bool
	Terminated   bool // etcd container terminated, not running
	CrashLooping bool
	Deleting     bool // deletionTimestamp set
	NodeNotReady bool // node NotReady/Unreachable
	Version      string
	CreatedAt    time.Time
	// UnhealthySince is when the controller first saw this pod unhealthy.
	UnhealthySince time.Time
	// Image is the image of the pod's etcd container.
	Image string
	// EtcdRunning: the kubelet reports the etcd container running.
	EtcdRunning bool
	// EtcdNeverRan: the etcd container has never run in this pod (no status
	// yet, or waiting without a previous termination): it wrote no data.
	EtcdNeverRan bool
	// RecoveryToken is the token of the quorum-loss recovery this pod seeds,
	// from the marker the controller puts on (and only on) that pod while the
	// recovery is in progress; empty on every other pod.
	RecoveryToken string
	// Drift is how the pod differs from the current spec (zero: it does not, or only in
	// ways a rollout leaves alone); the rollout rule rolls it out (reconfigure.go).
	Drift Drift
	// PeerTLS, ClientTLS: the pod mounts a peer / server TLS Secret, so its etcd runs
	// with peer / client TLS (read off the pod's volumes, what it actually runs).
	PeerTLS, ClientTLS bool
	// SnapshotCount is the pod's ETCD_SNAPSHOT_COUNT (0: not set, etcd's default).
	SnapshotCount uint64
	// SnapshotCountUnread says why the pod's snapshot count cannot be read off it (set
	// through valueFrom or envFrom, or not a number); empty when SnapshotCount is it.
	SnapshotCountUnread string
	// PeerServesTLS: the pod's etcd listens for peers over https; ClientPlaintext: it
	// serves plaintext clients on the client port (read off its arguments). Both tell
	// how far a member got while a plaintext cluster moves to TLS (tlsenable.go).
	PeerServesTLS, ClientPlaintext bool
}

// gone reports that the pod's process is certainly not coming back: waiting
// longer cannot help.
func (p *Pod) gone() bool {
	return p.Deleting || p.Phase == PodFailed || p.Phase == PodSucceeded
}

// Recovery is a quorum-loss recovery in progress: a new one-member cluster
// seeded from the data of Source, which had Revision when it was chosen.
type Recovery struct {
	Source    string
	SourceID  uint64
	Revision  int64
	Member    string // the new cluster's first member and its pod
	StartedAt time.Time
	// Token is the new cluster's token; the new member's pod carries it as its
	// RecoveryToken, which is what proves the record is the controller's.
	Token string
}

// PendingMember is the in-flight learner recorded by the controller.
type PendingMember struct {
	Name    string
	ID      uint64
	AddedAt time.Time
}

// Kind is the type of an Action.
type Kind int

// Action kinds. The zero value is Wait, so a forgotten field never does
// anything destructive.
const (
	Wait Kind = iota
	Done
	Bootstrap
	CreatePod
	AddLearner
	PromoteLearner
	MoveLeader
	RemoveMember
	ReplaceMember
	DeletePod
	UpgradeMember
	RefuseUpgrade
	QuorumLost
	ForceNewCluster
	FinishRecovery
	AbortRecovery
	FixPodImage
	PatchPodMetadata
	Defragment
	Compact
	DisarmAlarm
	FinishMaintenance
	RestoreFromBackup
	FinishBackupRestore
	AbortBackupRestore
	UpdatePeerURL
	TakeUpgradeBackup
	EnableDowngrade
	CancelDowngrade
)

var kindNames = [...]string{
	Wait: "Wait", Done: "Done", Bootstrap: "Bootstrap", CreatePod: "CreatePod",
	AddLearner: "AddLearner", PromoteLearner: "PromoteLearner", MoveLeader: "MoveLeader",
	RemoveMember: "RemoveMember", ReplaceMember: "ReplaceMember", DeletePod: "DeletePod",
	UpgradeMember: "UpgradeMember", RefuseUpgrade: "RefuseUpgrade", QuorumLost: "QuorumLost",
	ForceNewCluster: "ForceNewCluster", FinishRecovery: "FinishRecovery", AbortRecovery: "AbortRecovery",
	FixPodImage: "FixPodImage", PatchPodMetadata: "PatchPodMetadata",
	Defragment: "Defragment", Compact: "Compact", DisarmAlarm: "DisarmAlarm",
	FinishMaintenance: "FinishMaintenance",
	RestoreFromBackup: "RestoreFromBackup", FinishBackupRestore: "FinishBackupRestore",
	AbortBackupRestore: "AbortBackupRestore", UpdatePeerURL: "UpdatePeerURL",
	TakeUpgradeBackup: "TakeUpgradeBackup",
	EnableDowngrade:   "EnableDowngrade", CancelDowngrade: "CancelDowngrade",
}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// NewMember is one member of the initial cluster.
type NewMember struct {
	Name string
}

// Action is the single next step. Which fields are set depends on Kind:
//
//	Wait            Reason, Message, RequeueAfter
//	Done            —
//	Bootstrap       Members (the whole initial cluster), Version
//	CreatePod       Name, ID, Version (pod joins the existing cluster, or, for a
//	                member with a claim, restarts on its data)
//	AddLearner      Name, Version (MemberAdd as learner; record Pending)
//	PromoteLearner  ID, Name
//	MoveLeader      From, To
//	RemoveMember    ID, Name, DeletePod
//	ReplaceMember   ID, Name, DeletePod (remove a dead member; a new one is
//	                added by later plans under a new name)
//	DeletePod       Name (orphan pod, with its claim); with KeepClaim, a finished
//	                pod of a member with a claim (the pod alone, so the recreate rule can
//	                recreate it); with Reason CorrectingBootstrap, a pod of a bootstrap
//	                that never formed, recreated from the spec by Bootstrap (with its
//	                claim unless KeepClaim)
//	UpgradeMember   ID, Name, Version (restart that pod on the new image)
//	RefuseUpgrade   Reason, Message
//	QuorumLost      Reason, Message (nothing is touched)
//	ForceNewCluster From, Name, Revision (the survivor), Members (the one new
//	                member), Version: record the recovery if not yet recorded,
//	                then create the new member's pod, which copies the
//	                survivor's data and bootstraps a new one-member cluster
//	FinishRecovery  Name, ID (the new member): delete every other member pod,
//	                forget the recovery; the cluster then regrows by scale-up
//	AbortRecovery   Name (the new member), DeletePod: forget the recovery, and
//	                delete the new member's pod only if DeletePod (the pod
//	                exists and carries the recovery's marker); the old members
//	                were never touched
//	FixPodImage     Name, Version: set the etcd image of a pod of a bootstrap
//	                that never formed to Desired.Image, in place
//	PatchPodMetadata Name, ID: put the spec's pod labels and annotations on the
//	                member's running pod, in place (no restart)
//	UpdatePeerURL   Name, ID: set the member's peer URL to the spec's (https)
//	                through etcd's member update (turning TLS on, tlsenable.go)
//	Defragment      ID, Name, Trigger: defragment that member (record the run
//	                first when Trigger differs from the recorded one)
//	Compact         Revision, Trigger: compact the history at Revision
//	DisarmAlarm     Alarm, ID (0: every member), Trigger: disarm the alarm
//	FinishMaintenance Trigger: forget the recorded run, record its end
//	RestoreFromBackup    Name (the new member), Version, Revision (the backup's):
//	                record the restore if not yet recorded, then create the member's
//	                pod, which restores the backup and bootstraps a one-member cluster
//	FinishBackupRestore  Name, ID: the restored member serves; mark the record finished
//	AbortBackupRestore   Name, DeletePod: forget the restore, deleting its own member's
//	                pod only if DeletePod
//	EnableDowngrade Version (MAJOR.MINOR): enable etcd's downgrade to it (downgrade.go)
//	CancelDowngrade Version (etcd's target): cancel etcd's downgrade in progress
//
// Reason is a CamelCase code usable as a condition reason; Message is for
// humans. ClearPending asks the controller to forget Observed.Pending before
// (or regardless of) executing the action.
type Action struct {
	Kind         Kind
	Reason       string
	Message      string
	RequeueAfter time.Duration

	Members   []NewMember
	Name      string
	ID        uint64
	From, To  uint64
	DeletePod bool
	Version   string
	Revision  int64
	// KeepClaim, on DeletePod: delete only the pod object (a finished pod whose member
	// restarts on its claim), never the claim.
	KeepClaim bool
	// Trigger, on the maintenance kinds: why the run runs (Trigger* constants).
	Trigger string
	// Alarm, on DisarmAlarm: the alarm type (AlarmNoSpace, AlarmCorrupt).
	Alarm string
	// AsRunning, on CreatePod and AddLearner: render the new pod with the TLS Secrets
	// and cluster domain the running members use, not the spec's, which the rollout rule
	// refuses or holds (asrunning.go).
	AsRunning bool
	// StepBackup, on the first UpgradeMember of a minor step: the backup taken before
	// it, or why none was (upgradebackup.go).
	StepBackup *StepBackup
	// ClaimBytes, on TakeUpgradeBackup: no EtcdBackup names the cluster; back up into a
	// claim of the operator's of this size, named as the backup (upgradebackup.go).
	ClaimBytes int64

	ClearPending bool
}

func (a Action) String() string {
	s := a.Kind.String()
	switch a.Kind {
	case Bootstrap:
		s += fmt.Sprintf("{%d members, v%s}", len(a.Members), a.Version)
	case CreatePod, AddLearner, UpgradeMember:
		asRunning := ""
		if a.AsRunning {
			asRunning = " as running"
		}
		s += fmt.Sprintf("{%s %x v%s%s}", a.Name, a.ID, a.Version, asRunning)
	case TakeUpgradeBackup:
		s += fmt.Sprintf("{%s v%s}", a.Name, a.Version)
		if a.ClaimBytes > 0 {
			s = s[:len(s)-1] + fmt.Sprintf(" claim %d}", a.ClaimBytes)
		}
	case EnableDowngrade, CancelDowngrade:
		s += fmt.Sprintf("{v%s}", a.Version)
	case PromoteLearner, DeletePod:
		s += fmt.Sprintf("{%s %x}", a.Name, a.ID)
	case RemoveMember, ReplaceMember:
		s += fmt.Sprintf("{%s %x deletePod=%v}", a.Name, a.ID, a.DeletePod)
	case MoveLeader:
		s += fmt.Sprintf("{%x -> %x}", a.From, a.To)
	case ForceNewCluster:
		s += fmt.Sprintf("{from %s %x rev %d", a.Name, a.From, a.Revision)
		for _, m := range a.Members {
			s += " -> " + m.Name
		}
		s += "}"
	case FinishRecovery, AbortRecovery:
		s += fmt.Sprintf("{%s %x}", a.Name, a.ID)
	case FixPodImage:
		s += fmt.Sprintf("{%s v%s}", a.Name, a.Version)
	case PatchPodMetadata, UpdatePeerURL:
		s += fmt.Sprintf("{%s %x}", a.Name, a.ID)
	case Defragment, Compact, DisarmAlarm, FinishMaintenance:
		s += maintenanceString(a)
	case RestoreFromBackup, FinishBackupRestore, AbortBackupRestore:
		s += fmt.Sprintf("{%s %x rev %d}", a.Name, a.ID, a.Revision)
	}
	if a.Reason != "" {
		s += " " + a.Reason
	}
	if a.Message != "" {
		s += ": " + a.Message
	}
	return s
}

// IsMembershipChange reports whether executing a changes the etcd member set
// (or its voters).
func (a Action) IsMembershipChange() bool {
	switch a.Kind {
	case AddLearner, PromoteLearner, RemoveMember, ReplaceMember, ForceNewCluster, FinishRecovery:
		return true
	}
	return false
}

// Quorum is the number of voters needed for a majority of n.
func Quorum(n int) int { return n/2 + 1 }

func (d Desired) withDefaults() Desired {
	if d.ReplaceUnhealthyAfter <= 0 {
		d.ReplaceUnhealthyAfter = DefaultReplaceUnhealthyAfter
	}
	if d.ReplaceGoneAfter <= 0 {
		d.ReplaceGoneAfter = DefaultReplaceGoneAfter
	}
	// A certainly-gone process never deserves a longer wait than an
	// ambiguous one.
	if d.ReplaceGoneAfter > d.ReplaceUnhealthyAfter {
		d.ReplaceGoneAfter = d.ReplaceUnhealthyAfter
	}
	if d.QuorumLossGrace <= 0 {
		d.QuorumLossGrace = DefaultQuorumLossGrace
	}
	if d.LearnerTimeout <= 0 {
		d.LearnerTimeout = DefaultLearnerTimeout
	}
	if d.PromoteMaxLag == 0 {
		d.PromoteMaxLag = DefaultPromoteMaxLag
	}
	if d.RecoveryTimeout <= 0 {
		d.RecoveryTimeout = DefaultRecoveryTimeout
	}
	return d
}

// Drift is how a member pod differs from the current spec, as the controller judges it
// from the spec fingerprint the pod was created with.
type Drift struct {
	// Fields are the spec fields the pod lacks, in spec order, for messages.
	Fields []string
	// NewPod: some of them reach a member only through a new pod (resources,
	// environment, affinity, ...).
	NewPod bool
	// Metadata: some of them are labels or annotations, which can be put on the
	// running pod in place.
	Metadata bool
	// Held are fields a new pod would take up but whose change cannot be rolled out
	// yet (TLS secrets, the cluster domain): while any pod has one, the rollout rule restarts
	// no member.
	Held []string
	// TLS: the pod runs on other TLS Secrets than the spec names (tls.go decides whether
	// that is a rotation the rollout rule may roll out, or a change it refuses).
	TLS bool
	// Claim: the pod's claim was created from another claim spec. Running members keep
	// their claims; only a bootstrap that never formed recreates a claim that was never
	// bound (bootstrap.go).
	Claim bool
	// LeaveNode is the cordoned node (spec.unschedulable: being drained or taken out of
	// service) the pod runs on, "" when its node is schedulable. Such a member is moved
	// to a new pod on another node through a learner, even with a claim: a claim bound
	// to that node cannot follow it (cordon.go).
	LeaveNode string
}
