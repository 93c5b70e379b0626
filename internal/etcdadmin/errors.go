package etcdadmin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Every error returned by this package that stems from a
// known etcd condition wraps one of these, so callers decide with errors.Is
// and never by matching message text.
var (
	// Permanent: retrying the same request cannot succeed.
	ErrMemberNotFound   = errors.New("member not found")
	ErrPeerURLExists    = errors.New("peer URL already belongs to a member")
	ErrMemberNotLearner = errors.New("member is not a learner")
	ErrTooManyLearners  = errors.New("cluster already has the maximum number of learners")
	ErrInvalidPeerURL   = errors.New("invalid peer URL")
	ErrBadTransferee    = errors.New("leadership cannot be moved to that member")
	ErrNoEndpoint       = errors.New("no etcd endpoint answered")

	// Transient: retried within the retry budget; returned (wrapped) when the
	// budget or the caller's context runs out.
	ErrLearnerNotReady  = errors.New("learner is not yet in sync with the leader")
	ErrUnhealthyCluster = errors.New("cluster unhealthy (a listed member may be down, or the cluster started moments ago)")
	ErrNotEnoughStarted = errors.New("not enough started members to reconfigure safely")
	ErrNoLeader         = errors.New("no leader")
	ErrNotLeader        = errors.New("endpoint is not the leader")
	ErrLeaderChanged    = errors.New("leader changed during the request")
	ErrServerTimeout    = errors.New("request timed out in etcd")
	ErrUnavailable      = errors.New("etcd endpoint unavailable")
	// The request reached a learner, which serves no cluster-changing request (etcd
	// 3.5 refuses MemberPromote there); the client's round robin sends the retry to
	// the next endpoint.
	ErrEndpointIsLearner = errors.New("the endpoint asked is a learner")
	// The members have not yet agreed on a cluster version (the first
	// seconds after a cluster starts).
	ErrVersionNotDecided = errors.New("cluster version not decided yet")
)

// kind of an etcd error, recognised by the server's message (the stable part
// of etcd's wire contract; the gRPC code alone is too coarse).
type kind struct {
	sentinel  error
	transient bool
}

var serverErrors = map[string]kind{
	rpctypes.ErrorDesc(rpctypes.ErrGRPCMemberNotFound): {ErrMemberNotFound, false},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCPeerURLExist):   {ErrPeerURLExists, false},
	// etcd derives a new member's ID from its peer URLs and the current
	// second, so adding the same peer URLs twice within a second collides on
	// the ID instead: the same condition for the caller.
	rpctypes.ErrorDesc(rpctypes.ErrGRPCMemberExist):                {ErrPeerURLExists, false},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCMemberNotLearner):           {ErrMemberNotLearner, false},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCTooManyLearners):            {ErrTooManyLearners, false},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCMemberBadURLs):              {ErrInvalidPeerURL, false},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCBadLeaderTransferee):        {ErrBadTransferee, false},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCLearnerNotReady):            {ErrLearnerNotReady, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCUnhealthy):                  {ErrUnhealthyCluster, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCMemberNotEnoughStarted):     {ErrNotEnoughStarted, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCNoLeader):                   {ErrNoLeader, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCNotLeader):                  {ErrNotLeader, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaderChanged):              {ErrLeaderChanged, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCStopped):                    {ErrUnavailable, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCTimeout):                    {ErrServerTimeout, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCTimeoutDueToLeaderFail):     {ErrServerTimeout, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCTimeoutDueToConnectionLost): {ErrServerTimeout, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCTimeoutWaitAppliedIndex):    {ErrServerTimeout, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCRequestTooManyRequests):     {ErrServerTimeout, true},
	rpctypes.ErrorDesc(rpctypes.ErrGRPCNotSupportedForLearner):     {ErrEndpointIsLearner, true},
	// Not in rpctypes: the server sends these as untyped errors.
	"etcdserver: request timed out, leader transfer took too long": {ErrServerTimeout, true},
	// A member that has just applied its own removal (or is shutting down) still accepts
	// requests for a moment and answers this; another endpoint serves the retry.
	"raft: stopped": {ErrUnavailable, true},
}

// classify maps an error from clientv3 to a sentinel (nil when unknown) and
// whether repeating the request may succeed. parent is the caller's context:
// a deadline of one attempt is transient, the caller's own is not.
func classify(parent context.Context, err error) (sentinel error, transient bool) {
	if err == nil {
		return nil, false
	}
	if k, ok := serverErrors[rpctypes.ErrorDesc(err)]; ok {
		return k.sentinel, k.transient
	}
	if parent.Err() != nil {
		return nil, false
	}
	// The attempt's own timeout, or the connection dropping during an election.
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrUnavailable, true
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded:
			return ErrUnavailable, true
		}
	}
	// Errors below gRPC (dial failures) surface as plain errors.
	msg := err.Error()
	for _, m := range []string{"connection refused", "connection reset", "broken pipe", "transport is closing"} {
		if strings.Contains(msg, m) {
			return ErrUnavailable, true
		}
	}
	return nil, false
}

// IsTransient reports whether err is worth repeating later: the condition is
// expected to clear on its own (an election, a member starting or catching up).
func IsTransient(err error) bool {
	for _, s := range []error{ErrLearnerNotReady, ErrUnhealthyCluster, ErrNotEnoughStarted, ErrNoLeader,
		ErrNotLeader, ErrLeaderChanged, ErrServerTimeout, ErrUnavailable, ErrNoEndpoint, ErrVersionNotDecided,
		ErrEndpointIsLearner} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// Error is the error returned by the operations of Admin. It names the
// operation and its target, how long it was tried, and wraps both the sentinel
// (Kind) and the last error from etcd (Err), so errors.Is works for either.
type Error struct {
	Op       string        // e.g. "MemberAddAsLearner"
	Target   string        // member ID (hex) or peer URLs or endpoint; may be empty
	Kind     error         // one of the sentinels above, or nil
	Err      error         // the last underlying error
	Attempts int           // number of requests sent
	Elapsed  time.Duration // time spent including backoff
	ctxErr   error         // the caller's context error if that ended the retries
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("etcdadmin: ")
	b.WriteString(e.Op)
	if e.Target != "" {
		b.WriteString(" ")
		b.WriteString(e.Target)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (gave up after %d attempts in %s", e.Attempts, e.Elapsed.Round(time.Millisecond))
		if e.ctxErr != nil {
			fmt.Fprintf(&b, ", %v", e.ctxErr)
		}
		b.WriteString(")")
	}
	if e.Err != nil && (e.Kind == nil || e.Err != e.Kind) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes the sentinel, the underlying error and, when the caller's
// context ended the retries, the context's error.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, x := range []error{e.Kind, e.Err, e.ctxErr} {
		if x != nil {
			errs = append(errs, x)
		}
	}
	return errs
}

// IsTLSError reports whether err comes from a failed TLS handshake: a certificate the
// client does not trust (or that names another host), or a server refusing the client's
// certificate. Waiting never fixes these, unlike the timeouts they are reported as.
func IsTLSError(err error) bool {
	var (
		unknownCA *x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		alert     tls.AlertError
		record    tls.RecordHeaderError
	)
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &record) ||
		// An alert received from the server (e.g. "certificate required") has an
		// unexported type in crypto/tls; its text is the only mark.
		strings.Contains(err.Error(), "remote error: tls: ")
}
