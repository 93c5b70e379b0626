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

	anon, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
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
