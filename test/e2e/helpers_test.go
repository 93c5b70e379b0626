package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/controllers"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// buildOperatorImage builds the operator binary into a new directory under the name the
// image's command uses, for bench.Options.ExtraImages: pods that run the operator's image
// (restore init containers, backup pods, the operator itself) then run this build.
func buildOperatorImage(t *testing.T, command string) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, filepath.Base(command)), ".")
	build.Dir = framework.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build operator: %v\n%s", err, out)
	}
	return dir
}

// setupWithOperatorImage is framework.Setup on a bench that can run the operator's image.
func setupWithOperatorImage(t *testing.T) *framework.Env {
	t.Helper()
	dir := buildOperatorImage(t, render.OperatorCommand)
	return framework.SetupWithOptions(t, bench.Options{ExtraImages: map[string]string{controllers.DefaultOperatorImage: dir}})
}

// createClaim creates a 1 GiB ReadWriteOnce claim (the bench provisions it).
func createClaim(e *framework.Env, name string) {
	e.Create(&corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})
}

// writeKeys puts n keys "<prefix>/%04d" = "<valuePrefix>%d", retrying the whole batch
// until it succeeds (puts are idempotent).
func writeKeys(e *framework.Env, cli *clientv3.Client, n int, prefix, valuePrefix string) {
	e.Eventually(30*time.Second, "keys written", func() error {
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err := cli.Put(ctx, fmt.Sprintf("%s/%04d", prefix, i), fmt.Sprintf("%s%d", valuePrefix, i))
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	})
}
