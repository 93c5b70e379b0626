// Package planner decides the single next safe step for one etcd cluster.
//
// Plan is a pure function from (Desired, Observed) to one Action: no I/O,
// no clock (Observed.Now is an input), no randomness (names derive from
// Observed.NameSeed and Observed.Now). The controller observes, calls Plan,
// executes the one action, records what it must (Pending, Bootstrapped,
// BootstrapMembers, RetiredNames, the *Since times) and calls Plan again.
// Every safety rule of the operator lives here.
//
// # Vocabulary
//
// A voter is a non-learner member. A member is reachable when it answered
// Status in this observation; it is alive when, in addition, it has started
// (published its name: a member that has not started has an empty name in
// MemberList) and its pod exists and is not gone (Failed, Succeeded or being
// deleted). Quorum(n) is n/2+1. "Down since" is the earliest recorded
// UnhealthySince of the member or its pod (Now when nothing is recorded yet,
// so the grace starts now), but never earlier than the pod's creation: a
// freshly created pod always gets its full grace. Pods are matched to
// members by the member-ID annotation first and by name otherwise; a member
// that has not started is matched only by ID or by the Pending record
// (view.go, health.go).
//
// # Rules
//
// Plan (planner.go) applies the rules in this order and the first that
// applies wins. Each file opens its rule with the full text; the reasons
// actions carry are constants in api/v1beta2/planner_reasons.go. A rule is
// called by its name (the word that opens its entry below: the paused, fork,
// size, recovery, backup-restore, bootstrap, recreate, no-members, quorum,
// orphan, in-flight, alive-quorum, dead-member, corrupt, scale-down, grace,
// scale-up, upgrade, maintenance and rollout rules), never by its place in the
// list, which moves when a rule is added (TestRulesNamedNotNumbered).
//
//  1. Paused → Wait. Nothing is touched, not even orphan pods (planner.go).
//     Fork: the answering members disagree on the cluster ID (Status and
//     MemberList response headers) or on the set of members in their own lists →
//     Wait(MembershipUnsettled) for ForkSettle, then Wait(Forked) naming the members
//     outside the largest agreeing group. A member image may force a new cluster; every
//     rule below reasons about one cluster, so nothing is removed, replaced, recovered
//     or deleted until they agree (fork.go).
//  2. Size: Size < 0 → Wait(InvalidSpec): there is no safe move towards an
//     impossible target (planner.go).
//     Hibernation: size 0, after the recovery records below. With claims, every
//     member pod is stopped (DeletePod with KeepClaim, followers first, the leader
//     last), the claims, etcd's membership and status's records kept; then
//     Wait(Hibernated). Without claims → Wait(InvalidSpec); a pod without its claim →
//     Wait(HibernationRefused), nothing stopped. No rule below runs at size 0; a size
//     above 0 brings the members back through the recreate rule (hibernate.go).
//  3. Recovery: a recorded quorum-loss recovery is finished (FinishRecovery), retried
//     (ForceNewCluster) or abandoned (AbortRecovery) before anything else;
//     nothing of the old cluster is deleted before the new one serves
//     (recovery.go). Backup restore, likewise: a recorded restore from backup after total loss
//     (FinishBackupRestore, RestoreFromBackup again, AbortBackupRestore;
//     totalloss.go). A record is only the controller's word once its member's pod
//     carries the controller's signed marker (Pod.RecoveryToken is set only then); a
//     record its pod does not bear out, whose member's cluster lists other members, or
//     (before the pod) whose source is not the best survivor is forgotten, nothing
//     deleted.
//
// Without a member list (no endpoint answered MemberList):
//
//  4. Bootstrap: never formed → Bootstrap all Size members at once, complete an
//     interrupted bootstrap, or make a bootstrap that never formed follow a
//     corrected spec: a pod lacking a field only a new pod takes up, whose etcd
//     never ran, is deleted (with its claim only if never bound and its spec
//     changed) and created again; a pod's image is corrected in place. Nothing
//     else is deleted (bootstrap.go).
//  5. Recreate, pods back on their data: a member whose pod is missing while its data
//     claim exists gets its pod back, same name and ID; a Failed or Succeeded
//     pod of such a member is deleted first (not its claim). Without a member
//     list the members are those status recorded (kept while none answers),
//     every one of them gets its pod back, and while their pods are only being
//     deleted (nodes down) → Wait, never a loss. With a member list it
//     runs first too, before the quorum rules: it changes no membership and
//     may bring quorum back (recreate.go).
//  6. No members: formed, no member answers → QuorumLost when no pod exists, else Wait
//     (a QuorumLost report after QuorumLossGrace); nothing is destructive
//     without a member list (nomembers.go). With no pod and no claim at all
//     for QuorumLossGrace, the opt-in and a backup → RestoreFromBackup into one
//     new member, which scale-up then regrows (totalloss.go).
//
// With a member list, after the recreate rule:
//
//  7. Quorum: fewer than a quorum of voters reachable, or no reachable leader
//     → Wait, then QuorumLost, or ForceNewCluster from the best survivor with
//     the opt-in. No rule below runs without quorum (quorum.go).
//  8. Orphan: a pod that a majority of the voters' own member lists
//     agree has no member → DeletePod, one at a time (orphans.go).
//  9. In-flight, one membership change at a time: a learner, an unstarted member or the
//     Pending record is finished (CreatePod, PromoteLearner) or abandoned
//     (RemoveMember) before any other change (inflight.go).
//  10. Alive quorum: fewer alive voters than a quorum, or the leader not alive
//     → Wait; every change below needs one (health.go).
//  11. Dead member: a voter down past its grace → ReplaceMember, the one down
//     longest first, only if an alive quorum remains (replace.go). Then
//     corrupt: members etcd's CORRUPT alarm names → ReplaceMember (MoveLeader first
//     if one leads), one at a time at full size, only while they are a minority
//     and the others keep an alive quorum, never the last voter; DisarmAlarm
//     once they are gone (maintenance.go).
//  12. Scale down: voters > Size → RemoveMember (MoveLeader first if the
//     victim leads) (scaledown.go).
//  13. Grace: members within their grace → Wait: their grace decides, not a
//     scale-up or upgrade step (unhealthy.go).
//  14. Scale up: voters < Size → AddLearner, one at a time (scaleup.go).
//  15. Upgrade within the allowed skew, followers first and the leader last,
//     one member at a time (UpgradeMember, MoveLeader), or RefuseUpgrade;
//     otherwise Done (upgrade.go). A minor step into 3.7 or later first waits
//     (UpgradeWaitsForSnapshot) until every voter has applied its snapshot count
//     past the raft index by which all members ran the previous minor, so each
//     has a raft snapshot past the older log (snapshotgate.go). Before the first
//     member of a minor step moves, the cluster is backed up to its configured
//     EtcdBackup target, or without one into a claim the operator creates and owns
//     (TakeUpgradeBackup, Wait(UpgradeBackupPending)); while that backup fails →
//     Wait(UpgradeBackupFailed), no member moved; with no default StorageClass for the
//     claim the step starts saying no backup was taken (NoBackupStorage), or waits when
//     the cluster requires one; opted out (skip) it starts without (upgradebackup.go).
//     A version one minor down from 3.6 or later goes through etcd's downgrade API
//     instead: the same backup, EnableDowngrade, Wait(Downgrading) until etcd has
//     migrated every member's storage, then the members one at a time as above; etcd's
//     downgrade enabled while spec.version is not its target → CancelDowngrade; any
//     other minor or major step down → RefuseUpgrade(DowngradeRefused) (downgrade.go).
//  16. Maintenance, only when the upgrade rule is Done: NOSPACE remediation (Compact,
//     Defragment every voter, DisarmAlarm once every database is 10% below its
//     quota), then a recorded defragmentation run, a due schedule slot or a
//     member past the threshold → Defragment, one member at a time, followers
//     first, the leader last after MoveLeader (maintenance.go).
//  17. Rollout, a rolling reconfiguration, once nothing is left to upgrade (or the upgrade
//     is refused) and no maintenance step is due: member pods not on the current spec (Pod.Drift) get it one
//     member at a time behind the upgrade's health gate: metadata patched in
//     place (PatchPodMetadata); else followers first, the leader last after
//     MoveLeader, a new pod on the member's claim (DeletePod with KeepClaim, then
//     the recreate rule), or, without a claim or below three voters, a learner added first
//     (AddLearner; the in-flight rule promotes it, the scale-down rule removes the drifted member)
//     (reconfigure.go). A voter whose pod is on a cordoned node (a drain) is
//     moved the same way, always through a learner, even with a claim; with no
//     other node to go to → Wait(NoNodeToLeaveTo) (cordon.go). TLS first: a
//     change of the TLS Secrets is rolled out only as a proven rotation
//     (Observed.TLSRefused empty); TLS to plaintext, mixed schemes, an unproven
//     rotation, or plaintext to TLS without claims / below three voters →
//     Wait(TLSChangeRefused), holding every restart (tls.go); plaintext to TLS
//     otherwise in three steps, each member at a time: DeletePod (certificates,
//     http peers), UpdatePeerURL then DeletePod (https peers), DeletePod (https
//     only); a member whose URL is https but whose pod listens on http restarts
//     before anything else (tlsenable.go). While a TLS change is refused or a field
//     held, a CreatePod or AddLearner of any rule says AsRunning: its pod runs on the
//     TLS Secrets and cluster domain the running members use (asrunning.go).
//
// # Precedence decisions
//
// Membership repair (the in-flight, alive-quorum, dead-member and corrupt rules) comes before scaling, and scaling before
// upgrading. A scale change made during a rolling upgrade is applied between
// two upgrade steps: each step ends only when the restarted member is alive
// again (the grace rule), so a restart and a membership change are never in flight
// together. New members are created on the desired version when its skew is
// allowed, otherwise on the highest version running, so a refused upgrade
// never blocks repairs.
//
// Helpers more than one rule uses are in helpers.go; the status summary the
// controller copies is derived in summary.go.
package planner
