package images

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PrivatePrefix is the repository path under which the bench registry acts as a private
// registry: with RegistryOptions.Private set, every request for a repository under it
// (pulls, and the pushes that put images there) needs those credentials, sent as HTTP
// Basic auth after a 401 with a Basic challenge, which is how containerd meets a
// registry that requires a login. Everything else stays anonymous.
const PrivatePrefix = "private/"

// Credentials are a login to the bench registry's private repositories.
type Credentials struct{ Username, Password string }

// NewCredentials makes a login with a random password, so a pull secret that works on
// one bench proves nothing on another.
func NewCredentials() (Credentials, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return Credentials{}, err
	}
	return Credentials{Username: "bench", Password: hex.EncodeToString(b)}, nil
}

// DockerConfigJSON is the .dockerconfigjson of a kubernetes.io/dockerconfigjson Secret
// that logs in to BenchHost, the registry host private images are named with.
func (c Credentials) DockerConfigJSON() []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password))
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{BenchHost: map[string]string{"auth": auth}}})
	return b
}

// requireLogin answers 401 with a Basic challenge to any request for a repository under
// PrivatePrefix that does not carry c.
func requireLogin(next http.Handler, c Credentials) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v2/"+PrivatePrefix) {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(c.Username)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(c.Password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="bench"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// PrivateName is the name pods use for image's private copy: BenchHost/private/<the
// image's repository path>, same tag or digest (quay.io/coreos/etcd:v3.6.16 ->
// bench.local/private/coreos/etcd:v3.6.16).
func PrivateName(image string) (string, error) {
	return MirrorRef(BenchHost+"/"+strings.TrimSuffix(PrivatePrefix, "/"), image)
}

// CopyToPrivate copies image, which the registry at registryAddr serves (a name as pods
// spell it), to its PrivateName there, logging in with c; it returns the private name.
func CopyToPrivate(registryAddr string, c Credentials, image string) (string, error) {
	src, err := MirrorRef(registryAddr, image)
	if err != nil {
		return "", err
	}
	priv, err := PrivateName(image)
	if err != nil {
		return "", err
	}
	dst, err := MirrorRef(registryAddr, priv)
	if err != nil {
		return "", err
	}
	srcRef, err := name.ParseReference(src, name.Insecure)
	if err != nil {
		return "", err
	}
	dstRef, err := name.ParseReference(dst, name.Insecure)
	if err != nil {
		return "", err
	}
	img, err := remote.Image(srcRef)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", image, err)
	}
	if err := remote.Write(dstRef, img, remote.WithAuth(&authn.Basic{Username: c.Username, Password: c.Password})); err != nil {
		return "", fmt.Errorf("push %s: %w", priv, err)
	}
	return priv, nil
}
