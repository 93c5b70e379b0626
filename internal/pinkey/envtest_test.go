package pinkey

import (
	"bytes"
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// TestLoadOrCreate against a real kube-apiserver: the first start creates the Secret
// with a fresh key, later starts (and other replicas) read the same key, a Secret
// holding no usable key is an error and is left as it is, and without a namespace
// nothing is created.
func TestLoadOrCreate(t *testing.T) {
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.EnvtestAssets(t)}
	cfg := testenv.StartEnvtest(t, env)
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"operator", "broken"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	first, err := LoadOrCreate(ctx, c, c, "operator")
	if err != nil || len(first) != Size || bytes.Equal(first, make([]byte, Size)) {
		t.Fatalf("first start: %d bytes, %v", len(first), err)
	}
	again, err := LoadOrCreate(ctx, c, c, "operator")
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("a restart got another key (or %v)", err)
	}
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "operator", Name: SecretName}, &sec); err != nil || !bytes.Equal(sec.Data[DataKey], first) {
		t.Fatalf("Secret %+v, %v", sec.ObjectMeta, err)
	}

	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "broken", Name: SecretName}, Data: map[string][]byte{DataKey: []byte("short")}}
	if err := c.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if key, err := LoadOrCreate(ctx, c, c, "broken"); err == nil || key != nil {
		t.Fatalf("a Secret without a usable key gave %d bytes, %v", len(key), err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(bad), &sec); err != nil || string(sec.Data[DataKey]) != "short" {
		t.Fatalf("the unusable Secret was changed: %v", err)
	}

	if key, err := LoadOrCreate(ctx, c, c, ""); err == nil || key != nil {
		t.Fatalf("no namespace: %d bytes, %v", len(key), err)
	}
}
