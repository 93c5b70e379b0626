package etcdadmin

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcd's user authentication: the operator's client carries the root user's credentials
// (Config.Username, Config.Password) and turns auth on (EnableAuth). Users and roles
// other than root are the cluster owner's.

// RootUser and RootRole are etcd's built-in administrator user and role.
const (
	RootUser = "root"
	RootRole = "root"
)

// PasswordEnv is the environment variable the operator's pods that dial etcd (the PVC
// backup pod) read the root password from; the pod spec names the Secret key, never the
// value.
const PasswordEnv = "ETCD_OPERATOR_ROOT_PASSWORD"

// ErrAuthFailed: etcd refused the configured user name and password.
var ErrAuthFailed = errors.New("etcd refused the user name and password")

// newClient makes a clientv3 client for eps. With credentials, clientv3 authenticates
// while it makes the client, which fails when no member answers in DialTimeout (a cluster
// still starting, a quorum lost, a dead member's own endpoint): the operator must still
// see such a cluster, so the client is then made without credentials (pending true), as
// lazily as one without, and a later dial authenticates. A refused password is an error.
// No error text holds the password: etcd's errors do not repeat it.
func newClient(cfg Config, eps []string) (c *clientv3.Client, pending bool, err error) {
	cc := clientConfig(cfg, eps)
	c, err = clientv3.New(cc)
	if err == nil || cc.Username == "" {
		return c, false, err
	}
	if errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(rpctypes.Error(err), rpctypes.ErrAuthFailed) {
		return nil, false, ErrAuthFailed
	}
	cc.Username, cc.Password = "", ""
	c, err = clientv3.New(cc)
	return c, err == nil, err
}

// AuthPending reports whether credentials were configured but the client runs without
// them: no member answered the authentication when it was made, or it turned auth on
// itself (EnableAuth). Such an Admin should be replaced (New) once the cluster answers,
// or requests of an auth-enabled cluster fail.
func (a *Admin) AuthPending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.authPending
}

// AuthEnabled asks the cluster whether authentication is on (etcd 3.5 and later).
func (a *Admin) AuthEnabled(ctx context.Context) (bool, error) {
	return retry(ctx, a, "AuthStatus", "", a.cfg.CallTimeout, func(ctx context.Context) (bool, error) {
		resp, err := a.client.AuthStatus(ctx)
		if err != nil {
			return false, err
		}
		return resp.Enabled, nil
	})
}

// EnableAuth creates the root user with password and the root role, grants the role to
// the user and turns authentication on. Each step tolerates having been done before (a
// controller may crash between them); a root user that exists gets password (else a root
// made earlier by someone else would lock the operator out once auth is on). The
// password is never logged.
func (a *Admin) EnableAuth(ctx context.Context, password string) error {
	steps := []struct {
		op  string
		run func(ctx context.Context) error
		ok  error // the error that means "done before"
	}{
		{"UserAdd", func(ctx context.Context) error {
			_, err := a.client.UserAdd(ctx, RootUser, password)
			if errors.Is(err, rpctypes.ErrUserAlreadyExist) || errors.Is(rpctypes.Error(err), rpctypes.ErrUserAlreadyExist) {
				// A root user made before (by a tenant, an older tool, or in restored
				// data) would keep a password the operator does not hold, and turning
				// auth on would lock the operator out: root gets the Secret's password.
				_, err = a.client.UserChangePassword(ctx, RootUser, password)
			}
			return err
		}, nil},
		{"RoleAdd", func(ctx context.Context) error {
			_, err := a.client.RoleAdd(ctx, RootRole)
			return err
		}, rpctypes.ErrRoleAlreadyExist},
		{"UserGrantRole", func(ctx context.Context) error {
			_, err := a.client.UserGrantRole(ctx, RootUser, RootRole)
			return err
		}, nil},
		{"AuthEnable", func(ctx context.Context) error {
			_, err := a.client.AuthEnable(ctx)
			return err
		}, nil},
	}
	for _, s := range steps {
		_, err := retry(ctx, a, s.op, "", a.cfg.CallTimeout, func(ctx context.Context) (struct{}, error) {
			err := s.run(ctx)
			if s.ok != nil && (errors.Is(err, s.ok) || errors.Is(rpctypes.Error(err), s.ok)) {
				err = nil
			}
			return struct{}{}, err
		})
		if err != nil {
			return err
		}
	}
	a.dropToken() // auth is on now: the next per-endpoint request gets a token
	// The balanced client was made while auth was off, so it holds no token. Over
	// plaintext etcd answers its next request "user name is empty" and clientv3 fetches
	// one; over client TLS (--client-cert-auth) etcd takes the certificate's common name
	// as the user instead ("user name not found"), and clientv3 never does: the client
	// is to be made again, as one made while no member answered.
	a.mu.Lock()
	a.authPending = true
	a.mu.Unlock()
	a.log.Info("etcd authentication enabled", "user", RootUser)
	return nil
}

// tokenCache is the root user's auth token, got from the cluster through the balanced
// client. etcd hands tokens out through raft, so every member (a learner too, which
// refuses to authenticate anyone itself) accepts one; the per-endpoint clients send it
// with each request (tokenCredentials).
type tokenCache struct {
	mu    sync.Mutex
	token string
	at    time.Time
	known bool
}

// Refresh intervals: a token is renewed after tokenMaxAge (etcd drops a simple token
// unused for its TTL, 5 minutes by default, and all of a restarted member's); "auth is
// off" is asked again after authOffMaxAge, so that auth turned on is noticed soon.
const (
	tokenMaxAge   = time.Minute
	authOffMaxAge = 3 * time.Second
)

// authToken is the token to send ("" while auth is off or no credentials are set).
func (a *Admin) authToken(ctx context.Context) (string, error) {
	if a.cfg.Username == "" {
		return "", nil
	}
	t := &a.tok
	t.mu.Lock()
	defer t.mu.Unlock()
	age := time.Since(t.at)
	if t.known && (t.token != "" && age < tokenMaxAge || t.token == "" && age < authOffMaxAge) {
		return t.token, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.DialTimeout)
	defer cancel()
	resp, err := a.client.Authenticate(ctx, a.cfg.Username, a.cfg.Password)
	switch {
	case err == nil:
		t.token = resp.Token
	case errors.Is(err, rpctypes.ErrAuthNotEnabled) || errors.Is(rpctypes.Error(err), rpctypes.ErrAuthNotEnabled):
		t.token = ""
	case errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(rpctypes.Error(err), rpctypes.ErrAuthFailed):
		return "", ErrAuthFailed
	default:
		return "", err
	}
	t.at, t.known = time.Now(), true
	return t.token, nil
}

// dropToken forgets the token, e.g. after a member refused it (restarted, it forgot it).
func (a *Admin) dropToken() {
	a.tok.mu.Lock()
	a.tok.known = false
	a.tok.mu.Unlock()
}

// refusedToken reports whether err is etcd refusing a request's token (or its absence).
func refusedToken(err error) bool {
	err = rpctypes.Error(err)
	return errors.Is(err, rpctypes.ErrUserEmpty) || errors.Is(err, rpctypes.ErrInvalidAuthToken) || errors.Is(err, rpctypes.ErrAuthOldRevision)
}

// tokenCredentials puts the Admin's token on every request of a per-endpoint client.
type tokenCredentials struct{ a *Admin }

func (c tokenCredentials) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	tok, err := c.a.authToken(ctx)
	if err != nil || tok == "" {
		// The request goes without: a cluster with auth off needs none, and one with auth
		// on refuses it, which the caller sees as any refusal.
		return nil, nil //nolint:nilerr
	}
	return map[string]string{rpctypes.TokenFieldNameGRPC: tok}, nil
}

func (tokenCredentials) RequireTransportSecurity() bool { return false }
