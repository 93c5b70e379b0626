package ociimage

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// basicAuthRegistry is an in-process registry that answers only requests carrying the
// basic-auth login user:password, challenging the others as a registry asking for a
// login does.
func basicAuthRegistry(t *testing.T, user, password string) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u+"\x00"+p), []byte(user+"\x00"+password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"login required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// isolateLogins points every place the default keychain reads logins from at empty
// temporary directories, so the test sees only the docker config it writes into the
// returned directory ($DOCKER_CONFIG), never the machine's.
func isolateLogins(t *testing.T) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("REGISTRY_AUTH_FILE", "")
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	return dir
}

// TestPushLogsInAsTheDockerConfigSays: to a registry that needs a login, Push, PushIndex
// and PushLayout (make image-push and make release-push) fail without one and succeed
// with the login `docker login` writes to $DOCKER_CONFIG/config.json; the registry then
// serves what was pushed. PushAnonymous does not read that login.
func TestPushLogsInAsTheDockerConfigSays(t *testing.T) {
	secret := make([]byte, 12)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	user, password := "releaser", base64.RawURLEncoding.EncodeToString(secret)
	reg := basicAuthRegistry(t, user, password)
	configDir := isolateLogins(t)

	dir := t.TempDir()
	imgs, idx := twoArchOperatorIndex(t, dir)
	lay := filepath.Join(dir, "layout")
	if err := WriteIndexLayout(lay, reg+"/release/op:v1", idx); err != nil {
		t.Fatal(err)
	}
	pushes := map[string]func() error{
		"Push":       func() error { return Push(reg+"/op:v1", imgs[0]) },
		"PushIndex":  func() error { return PushIndex(reg+"/op-index:v1", idx) },
		"PushLayout": func() error { _, err := PushLayout(lay); return err },
	}

	// No login: the registry refuses each push (so the one below is the login's doing).
	for what, push := range pushes {
		if err := push(); err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("%s without a login: %v, want 401 Unauthorized", what, err)
		}
	}

	// The login as `docker login <reg>` stores it without a credential helper.
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{
		reg: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(configDir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	for what, push := range pushes {
		if err := push(); err != nil {
			t.Fatalf("%s with the login in $DOCKER_CONFIG/config.json: %v", what, err)
		}
	}
	if err := PushAnonymous(reg+"/anon:v1", imgs[0]); err == nil {
		t.Error("PushAnonymous pushed to a registry asking for a login: it read the docker config")
	}

	login := remote.WithAuth(&authn.Basic{Username: user, Password: password})
	idxDigest, _ := idx.Digest()
	for _, ref := range []string{reg + "/op-index:v1", reg + "/release/op:v1"} {
		r, _ := name.ParseReference(ref, name.Insecure)
		got, err := remote.Index(r, login)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if d, _ := got.Digest(); d != idxDigest {
			t.Errorf("%s is %s, pushed %s", ref, d, idxDigest)
		}
	}
	r, _ := name.ParseReference(reg+"/op:v1", name.Insecure)
	got, err := remote.Image(r, login)
	if err != nil {
		t.Fatal(err)
	}
	if d, w := digestOf(t, got), digestOf(t, imgs[0]); d != w {
		t.Errorf("%s/op:v1 is %s, pushed %s", reg, d, w)
	}

	// Pull (make run-bundle's bundle and catalog images) logs in the same way;
	// PullAnonymous does not.
	ctx := context.Background()
	pulled, err := Pull(ctx, reg+"/op:v1")
	if err != nil {
		t.Fatalf("Pull with the login in $DOCKER_CONFIG/config.json: %v", err)
	}
	if d, w := digestOf(t, pulled), digestOf(t, imgs[0]); d != w {
		t.Errorf("Pull of %s/op:v1 got %s, pushed %s", reg, d, w)
	}
	if _, err := PullAnonymous(ctx, reg+"/op:v1"); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("PullAnonymous from a registry asking for a login: %v, want 401 Unauthorized", err)
	}
	if err := os.Remove(filepath.Join(configDir, "config.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Pull(ctx, reg+"/op:v1"); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("Pull without a login: %v, want 401 Unauthorized", err)
	}
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
