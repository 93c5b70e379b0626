// Package pinkey keeps the operator's restore-pin signing key (internal/pinsign) in a
// Secret of the operator's own namespace, created on first start: every replica and
// every restart signs and verifies with the same key, and no tenant namespace ever holds
// it. The key is never logged.
package pinkey

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Secret is read by name and created once, in the operator's namespace only (the
// Role is moved there by kustomize and the Helm chart, as for the webhook certificate).
//
// Create cannot be limited by name; get is limited to SecretName.
//
// +kubebuilder:rbac:groups="",namespace=etcd-operator-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=etcd-operator-system,resources=secrets,resourceNames=etcd-operator-restore-pin-key,verbs=get

const (
	// SecretName is the Secret holding the key.
	SecretName = "etcd-operator-restore-pin-key"
	// DataKey is the Secret's entry with the key's bytes.
	DataKey = "hmac-sha256-key"
	// Size is the key's length in bytes.
	Size = 32
)

// LoadOrCreate returns the key from the Secret in namespace, creating the Secret with
// Size random bytes if it does not exist. r reads uncached (the manager's cache is not
// running yet at start-up, and Secrets are never cached). A Secret holding anything but
// a key of Size bytes is an error and is left alone: it is not this function's to
// replace, and pins are then never trusted.
func LoadOrCreate(ctx context.Context, r client.Reader, w client.Writer, namespace string) ([]byte, error) {
	if namespace == "" {
		return nil, fmt.Errorf("the operator's namespace is unknown (set POD_NAMESPACE)")
	}
	key, err := load(ctx, r, namespace)
	if err == nil || !apierrors.IsNotFound(err) {
		return key, err
	}
	fresh := make([]byte, Size)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "etcd-operator"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{DataKey: fresh},
	}
	switch err := w.Create(ctx, s); {
	case err == nil:
		return fresh, nil
	case apierrors.IsAlreadyExists(err):
		// Another replica created it meanwhile: use theirs, so all sign alike.
		return load(ctx, r, namespace)
	default:
		return nil, fmt.Errorf("create Secret %s/%s: %w", namespace, SecretName, err)
	}
}

func load(ctx context.Context, r client.Reader, namespace string) ([]byte, error) {
	var s corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: SecretName}, &s); err != nil {
		return nil, err
	}
	key := s.Data[DataKey]
	if len(key) != Size {
		return nil, fmt.Errorf("Secret %s/%s: entry %s holds %d bytes, not a %d-byte key", namespace, SecretName, DataKey, len(key), Size)
	}
	return key, nil
}
