package etcdadmin

import (
	"context"
	"errors"
)

// noRetryKey carries the error kinds a caller wants back at once instead of retried.
type noRetryKey struct{}

// WithoutRetryOn returns a context under which the transient errors of the given kinds
// (e.g. ErrUnhealthyCluster, ErrLearnerNotReady) are returned on the first attempt
// instead of being retried within the budget. A reconciler uses it for conditions that
// clear in seconds on their own: it requeues instead of holding one of its few workers
// while etcd waits (a member add is refused for 5 s after any member reconnects).
func WithoutRetryOn(ctx context.Context, kinds ...error) context.Context {
	prev, _ := ctx.Value(noRetryKey{}).([]error)
	return context.WithValue(ctx, noRetryKey{}, append(append([]error(nil), prev...), kinds...))
}

// retryWanted says whether retry may try again after an error of kind.
func retryWanted(ctx context.Context, kind error) bool {
	kinds, _ := ctx.Value(noRetryKey{}).([]error)
	for _, k := range kinds {
		if errors.Is(kind, k) {
			return false
		}
	}
	return true
}
