package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// Backup verification: a throwaway pod restores a backup into a one-member etcd and
// checks what it serves. Its restore step (RestoreForVerification) writes the data
// directory and an Expectation file beside it; etcd starts on the data directory,
// listening on loopback only; its check step (CheckMember) compares what that member
// serves with the expectation. Both report a CheckResult as their container's
// termination message, which the operator reads.

// Expectation is what the restored member must serve: the revision and key count
// recorded when the backup was taken (backup.RecordedFacts).
type Expectation struct {
	Key      string `json:"key"`
	Revision int64  `json:"revision"`
	// SHA256 of the bytes restored, passed on into the check step's result.
	SHA256 string `json:"sha256,omitempty"`
	// KeyCount is nil for a backup stored without one (then only the revision is checked).
	KeyCount *int64 `json:"keyCount,omitempty"`
}

// CheckResult is the outcome of one check in a pod: a step of an EtcdBackup's
// verification or an EtcdRestore's snapshot check. Reason is empty on success, else the
// condition's reason, with Error saying what failed.
type CheckResult struct {
	Key      string `json:"key,omitempty"`
	Revision int64  `json:"revision,omitempty"`
	// SHA256 is the SHA-256 of the bytes restored (Result.Read): what the operator signs
	// as the verified pin.
	SHA256         string `json:"sha256,omitempty"`
	ServedRevision int64  `json:"servedRevision,omitempty"`
	KeyCount       int64  `json:"keyCount,omitempty"`
	// KeyCountChecked is false when the backup recorded no key count.
	KeyCountChecked bool   `json:"keyCountChecked,omitempty"`
	Reason          string `json:"reason,omitempty"`
	Error           string `json:"error,omitempty"`
}

// Encode is the JSON of r, short enough for a termination message (4096 bytes).
func (r CheckResult) Encode() []byte {
	if len(r.Error) > 3000 {
		r.Error = r.Error[:3000] + "..."
	}
	b, _ := json.Marshal(r)
	return b
}

// ParseCheckResult reads a termination message written by Encode.
func ParseCheckResult(msg string) (CheckResult, error) {
	var r CheckResult
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		return CheckResult{}, fmt.Errorf("verification result is not JSON: %w", err)
	}
	return r, nil
}

// RestoreForVerification restores the backup as a member's restore step does (download,
// stored checksum, etcd's integrity hash, the data directory) and writes the Expectation to
// expectFile for the check step. A failure says which check failed, as a result whose
// Reason is the one an EtcdRestore of that backup would report.
func RestoreForVerification(ctx context.Context, o Options, expectFile string) CheckResult {
	o.KeepRevisions = true // the check reads the keyspace at the backup's own revision
	res, err := Restore(ctx, o)
	if err != nil {
		return CheckResult{Key: o.Key, Reason: restoreFailureReason(err), Error: err.Error()}
	}
	if res.Skipped {
		// A fresh emptyDir never holds a data directory: something else wrote it.
		return CheckResult{Key: o.Key, Reason: etcdv1beta2.ReasonVerificationFailed, Error: "the data directory existed before the restore"}
	}
	if err := disableAuth(o.DataDir); err != nil { // verify_auth.go
		return CheckResult{Key: res.Key, Reason: etcdv1beta2.ReasonVerificationFailed, Error: err.Error()}
	}
	rev, n, hasCount := backup.RecordedFacts(res.Metadata)
	exp := Expectation{Key: res.Key, Revision: rev, SHA256: res.Read}
	if hasCount {
		exp.KeyCount = &n
	}
	b, _ := json.Marshal(exp)
	if err := os.WriteFile(expectFile, b, 0o600); err != nil {
		return CheckResult{Key: res.Key, Reason: etcdv1beta2.ReasonVerificationFailed, Error: fmt.Sprintf("write %s: %v", expectFile, err)}
	}
	return CheckResult{Key: res.Key, Revision: rev, SHA256: res.Read}
}

// restoreFailureReason names what a failed restore found.
func restoreFailureReason(err error) string {
	switch {
	case errors.Is(err, backup.ErrNotFound):
		return etcdv1beta2.ReasonBackupNotFound
	case errors.Is(err, backup.ErrChecksumMismatch), errors.Is(err, ErrChecksumPinned):
		return etcdv1beta2.ReasonChecksumMismatch
	case errors.Is(err, ErrNotRestorable):
		return etcdv1beta2.ReasonInvalidSnapshot
	case errors.Is(err, backup.ErrAccessDenied):
		return etcdv1beta2.ReasonAccessDenied
	case errors.Is(err, backup.ErrBucketNotFound):
		return etcdv1beta2.ReasonBucketNotFound
	default:
		return etcdv1beta2.ReasonVerificationFailed
	}
}

// ReadExpectation reads the file RestoreForVerification wrote.
func ReadExpectation(path string) (Expectation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Expectation{}, err
	}
	var e Expectation
	if err := json.Unmarshal(b, &e); err != nil {
		return Expectation{}, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

// memberPollInterval is how often CheckMember asks a member that does not answer yet.
const memberPollInterval = 500 * time.Millisecond

// CheckMember waits until the member at endpoint answers (until ctx ends: then
// ReasonEtcdDidNotStart), then checks that it serves at least the expected revision and,
// at that revision, the expected number of keys.
func CheckMember(ctx context.Context, endpoint string, want Expectation) CheckResult {
	out := CheckResult{Key: want.Key, Revision: want.Revision, SHA256: want.SHA256}
	fail := func(reason, format string, args ...any) CheckResult {
		out.Reason, out.Error = reason, fmt.Sprintf(format, args...)
		return out
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, MaxCallRecvMsgSize: etcdadmin.MaxRecvMsgSize})
	if err != nil {
		return fail(etcdv1beta2.ReasonVerificationFailed, "client for %s: %v", endpoint, err)
	}
	defer c.Close()
	served, lastErr := waitServing(ctx, c)
	if lastErr != nil {
		return fail(etcdv1beta2.ReasonEtcdDidNotStart, "the restored member at %s did not serve: %v", endpoint, lastErr)
	}
	out.ServedRevision = served
	if served < want.Revision {
		return fail(etcdv1beta2.ReasonRevisionMismatch, "the restored member serves revision %d, the backup recorded %d", served, want.Revision)
	}
	if want.KeyCount == nil {
		return out
	}
	n, _, err := etcdadmin.CountKeys(ctx, c, want.Revision)
	if errors.Is(err, rpctypes.ErrCompacted) {
		return fail(etcdv1beta2.ReasonRevisionMismatch, "the restored member has compacted the recorded revision %d", want.Revision)
	}
	if err != nil {
		return fail(etcdv1beta2.ReasonEtcdDidNotStart, "count the keys of the restored member at revision %d: %v", want.Revision, err)
	}
	out.KeyCount, out.KeyCountChecked = n, true
	if n != *want.KeyCount {
		return fail(etcdv1beta2.ReasonKeyCountMismatch, "the restored member holds %d keys at revision %d, the cluster held %d", n, want.Revision, *want.KeyCount)
	}
	return out
}

// waitServing asks the member for its revision until it answers or ctx ends; it returns
// the last error then.
func waitServing(ctx context.Context, c *clientv3.Client) (int64, error) {
	t := time.NewTicker(memberPollInterval)
	defer t.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, rev, err := etcdadmin.CountKeys(actx, c, 0)
		cancel()
		if err == nil {
			return rev, nil
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-t.C:
		}
	}
}
