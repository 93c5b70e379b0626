package etcdadmin

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// An Admin that carries the root credentials works before auth is on (etcd ignores
// them), turns auth on, and keeps working after; a client without credentials is then
// refused, and a wrong password is an error that does not repeat it.
func TestEnableAuthWithRootCredentials(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const pw = "s3cret-root-password"
	a, err := New(Config{Endpoints: c.Endpoints(), Username: RootUser, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.AuthPending() {
		t.Fatal("client made without credentials although the member answered")
	}
	if on, err := a.AuthEnabled(ctx); err != nil || on {
		t.Fatalf("AuthEnabled before enabling = %v, %v; want false, nil", on, err)
	}
	// Someone made root earlier with a password the operator does not hold.
	if _, err := a.Client().UserAdd(ctx, RootUser, "the-tenants-password"); err != nil {
		t.Fatal(err)
	}
	if err := a.EnableAuth(ctx, pw); err != nil {
		t.Fatal(err)
	}
	if err := a.EnableAuth(ctx, pw); err != nil { // done before: no error
		t.Fatalf("second EnableAuth: %v", err)
	}
	if on, err := a.AuthEnabled(ctx); err != nil || !on {
		t.Fatalf("AuthEnabled after enabling = %v, %v; want true, nil", on, err)
	}
	if _, err := a.MemberList(ctx); err != nil {
		t.Fatalf("member list with credentials: %v", err)
	}
	if _, err := a.Client().Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put with credentials: %v", err)
	}
	if st := a.Status(ctx); st[0].Err != nil {
		t.Fatalf("status with credentials: %v", st[0].Err)
	}

	anon := c.Client(t)
	if _, err := anon.Put(ctx, "k", "v2"); !errors.Is(rpctypes.Error(err), rpctypes.ErrUserEmpty) && !errors.Is(rpctypes.Error(err), rpctypes.ErrPermissionDenied) {
		t.Fatalf("put without credentials after auth enable: %v; want a refusal", err)
	}

	_, err = New(Config{Endpoints: c.Endpoints(), Username: RootUser, Password: "wrong-password"})
	if !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("New with a wrong password: %v; want ErrAuthFailed", err)
	}
}

// With credentials and no member answering, New still returns a client (made without
// them, AuthPending), as it does without credentials.
func TestNewWithCredentialsWhileNoMemberAnswers(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Endpoints: []string{"http://127.0.0.1:1"}, Username: RootUser, Password: "x", DialTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !a.AuthPending() {
		t.Fatal("AuthPending false for a client no member authenticated")
	}
}

// Client-certificate authentication as the members run it (client TLS with
// --client-cert-auth, as the chart starts them): once the operator has turned auth on, a
// client presenting a certificate of the cluster's CA and no user or password acts as
// the etcd user its common name names, with that user's roles; a name that is no user
// gets nothing; the operator's own client (its certificate's name is no user) keeps
// working with the root password.
func TestClientCertificateAuthAsCommonName(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartClusterWithOptions(t, 1, etcdtest.Options{TLS: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const pw = "s3cret-root-password"
	a, err := New(Config{Endpoints: c.Endpoints(), TLS: c.ClientTLS(), Username: RootUser, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.EnableAuth(ctx, pw); err != nil {
		t.Fatal(err)
	}
	deniedErr := func(err error) bool {
		return errors.Is(rpctypes.Error(err), rpctypes.ErrPermissionDenied) || errors.Is(rpctypes.Error(err), rpctypes.ErrUserEmpty) ||
			errors.Is(rpctypes.Error(err), rpctypes.ErrUserNotFound)
	}
	// Made while auth was off, the client has no token, and over client TLS etcd takes
	// its certificate's name (client-<n>, no user) as the user: its requests are refused,
	// which is why it must be made again (the operator's cache does so for an
	// AuthPending client, TestAdminCacheRemakesAuthPendingClient).
	if _, err := a.Client().Put(ctx, "/k", "v"); !deniedErr(err) {
		t.Fatalf("put through the client made before auth was on: %v; want it refused (the reason AuthPending must be set)", err)
	}
	if !a.AuthPending() {
		t.Fatal("after EnableAuth the client made while auth was off is not AuthPending: it stays without a token")
	}
	a2, err := New(Config{Endpoints: c.Endpoints(), TLS: c.ClientTLS(), Username: RootUser, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	if a2.AuthPending() {
		t.Fatal("a client made with auth on is AuthPending")
	}
	if _, err := a2.Client().Put(ctx, "/k", "v"); err != nil {
		t.Fatalf("put through the client made again with auth on: %v", err)
	}
	// The user's part (README: etcdctl user/role): a user without a password, for
	// certificates only, allowed /app/.
	root := a2.Client()
	if _, err := root.UserAddWithOptions(ctx, "app", "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.RoleAdd(ctx, "app-rw"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.RoleGrantPermission(ctx, "app-rw", "/app/", clientv3.GetPrefixRangeEnd("/app/"), clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserGrantRole(ctx, "app", "app-rw"); err != nil {
		t.Fatal(err)
	}
	asCert := func(cn string) *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), TLS: c.ClientTLSAs(cn), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
	app := asCert("app")
	if _, err := app.Put(ctx, "/app/k", "v"); err != nil {
		t.Fatalf("put under /app/ as the certificate's CN app: %v", err)
	}
	if _, err := app.Put(ctx, "/other", "v"); !deniedErr(err) {
		t.Fatalf("put outside /app/ as app: %v; want permission denied", err)
	}
	if _, err := asCert("nobody").Put(ctx, "/app/k", "v"); !deniedErr(err) {
		t.Fatalf("put as a CN that is no user: %v; want it refused", err)
	}
	if _, err := root.Put(ctx, "/other", "v"); err != nil {
		t.Fatalf("the operator's client (root password) after: %v", err)
	}
}
