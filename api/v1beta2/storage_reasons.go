package v1beta2

// Reasons of the SpecApplied condition about the members' claims (spec.pod.
// persistentVolumeClaimSpec). A larger storage request grows the existing claims where
// their StorageClass allows volume expansion; every other claim change, and a smaller
// size, applies to new members only (reason ReasonAppliesToNewMembersOnly).
const (
	// ReasonClaimsExpanding: the storage request grew and the members' claims are being
	// expanded; the message says how many are at the new size and what the others report
	// (FileSystemResizePending, Resizing, ...).
	ReasonClaimsExpanding = "ClaimsExpanding"
	// ReasonExpansionNotAllowed: the storage request grew but some members' claims cannot
	// grow: their StorageClass does not allow volume expansion, is gone, or they have
	// none. The message names the class and the claims; new members get the new size.
	ReasonExpansionNotAllowed = "ExpansionNotAllowed"
	// EventReasonClaimExpanded is the event reason for a member claim whose storage
	// request the operator raised to the spec's.
	EventReasonClaimExpanded = "ClaimExpanded"
)
