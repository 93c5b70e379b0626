package images

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// TestPrivateRepositoriesNeedTheLogin: an image copied to the private repositories is
// refused (401, Basic challenge) without the login and with a wrong one, and served with
// it; the public copy stays anonymous.
func TestPrivateRepositoriesNeedTheLogin(t *testing.T) {
	creds, err := NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	r := serve(t, RegistryOptions{Private: &creds})
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	const public = "quay.io/coreos/etcd:v9.9.9"
	if err := PushImage(r.Addr(), public, img); err != nil {
		t.Fatal(err)
	}
	priv, err := CopyToPrivate(r.Addr(), creds, public)
	if err != nil {
		t.Fatal(err)
	}
	if priv != BenchHost+"/private/coreos/etcd:v9.9.9" {
		t.Errorf("private name %q", priv)
	}
	ref := func(image string) name.Reference {
		t.Helper()
		m, err := MirrorRef(r.Addr(), image)
		if err != nil {
			t.Fatal(err)
		}
		n, err := name.ParseReference(m, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	want, _ := img.Digest()
	if _, err := remote.Image(ref(public)); err != nil {
		t.Errorf("anonymous pull of the public image: %v", err)
	}
	for what, auth := range map[string]authn.Authenticator{
		"no login":    authn.Anonymous,
		"wrong login": &authn.Basic{Username: creds.Username, Password: creds.Password + "x"},
	} {
		_, err := remote.Image(ref(priv), remote.WithAuth(auth))
		var te *transport.Error
		if !errors.As(err, &te) || te.StatusCode != http.StatusUnauthorized {
			t.Errorf("pull of the private image with %s: %v, want 401", what, err)
		}
	}
	got, err := remote.Image(ref(priv), remote.WithAuth(&authn.Basic{Username: creds.Username, Password: creds.Password}))
	if err != nil {
		t.Fatalf("pull of the private image with the login: %v", err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("private image digest %s, pushed %s", d, want)
	}

	var cfg struct {
		Auths map[string]struct{ Auth string } `json:"auths"`
	}
	if err := json.Unmarshal(creds.DockerConfigJSON(), &cfg); err != nil {
		t.Fatal(err)
	}
	if a, err := base64.StdEncoding.DecodeString(cfg.Auths[BenchHost].Auth); err != nil || string(a) != creds.Username+":"+creds.Password {
		t.Errorf(".dockerconfigjson for %s does not hold the login (%v)", BenchHost, err)
	}
}
