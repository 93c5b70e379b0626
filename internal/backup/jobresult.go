package backup

import (
	"encoding/json"
	"fmt"
)

// JobResult is what a backup run outside the operator (the `backup` subcommand in a pod
// with the claim mounted) reports back, as the JSON termination message of its container.
// A termination message is at most 4096 bytes, so it carries counts, not lists.
type JobResult struct {
	// On success:
	Key            string `json:"key,omitempty"`
	Location       string `json:"location,omitempty"`
	Size           int64  `json:"size,omitempty"`
	SHA256         string `json:"sha256,omitempty"`
	Endpoint       string `json:"endpoint,omitempty"`
	Revision       int64  `json:"revision,omitempty"`
	Version        string `json:"version,omitempty"`
	StorageVersion string `json:"storageVersion,omitempty"`
	Pruned         int    `json:"pruned,omitempty"`
	RetentionError string `json:"retentionError,omitempty"`
	// On failure: a condition reason (e.g. SnapshotFailed, Timeout) and the error.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// maxTerminationMessage is the kubelet's limit for one container's termination message.
const maxTerminationMessage = 4096

// NewJobResult describes a stored snapshot.
func NewJobResult(r *SnapshotResult) JobResult {
	j := JobResult{
		Key: r.Object.Key, Location: r.Location, Size: r.Object.Size, SHA256: r.Object.SHA256,
		Endpoint: r.Endpoint, Revision: r.Revision, Version: r.Version, StorageVersion: r.StorageVersion,
		Pruned: len(r.Pruned),
	}
	if r.RetentionErr != nil {
		j.RetentionError = r.RetentionErr.Error()
	}
	return j
}

// Encode returns the JSON, shortening error texts so it fits a termination message.
func (j JobResult) Encode() []byte {
	for {
		b, _ := json.Marshal(j)
		if len(b) <= maxTerminationMessage {
			return b
		}
		over := len(b) - maxTerminationMessage + len("...")
		switch {
		case len(j.Error) > over:
			j.Error = j.Error[:len(j.Error)-over] + "..."
		case len(j.RetentionError) > over:
			j.RetentionError = j.RetentionError[:len(j.RetentionError)-over] + "..."
		default:
			// Nothing left to shorten: the kubelet truncates the rest.
			return b
		}
	}
}

// ParseJobResult reads a termination message written by Encode.
func ParseJobResult(msg string) (JobResult, error) {
	var j JobResult
	if err := json.Unmarshal([]byte(msg), &j); err != nil {
		return JobResult{}, fmt.Errorf("backup pod result is not JSON: %w", err)
	}
	return j, nil
}
