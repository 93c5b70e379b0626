package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestPrepareVolumes(t *testing.T) {
	cs := fake.NewClientset(
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"}, Data: map[string][]byte{"tls.crt": []byte("CRT"), "tls.key": []byte("KEY")}},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"etcd.conf": "name: m1"}, BinaryData: map[string][]byte{"bin": {0, 1}}},
	)
	pod := envTestPod()
	pod.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "tls", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{
			SecretName: "tls", DefaultMode: ptr.To[int32](0o400),
			Items: []v1.KeyToPath{{Key: "tls.crt", Path: "certs/server.crt"}, {Key: "tls.key", Path: "server.key", Mode: ptr.To[int32](0o600)}},
		}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "opt", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "absent", Optional: ptr.To(true)}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "etcd.conf", Path: "c"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
	}
	pc := &podContext{pod: pod, podIP: "127.1.0.2", clientset: cs}
	root := t.TempDir()
	dirs, err := pc.prepareVolumes(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	check := func(vol, rel, want string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dirs[vol], rel)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s/%s = %q, want %q", vol, rel, got, want)
		}
		st, _ := os.Stat(p)
		if mode != 0 && st.Mode().Perm() != mode {
			t.Errorf("%s/%s mode %v, want %v", vol, rel, st.Mode().Perm(), mode)
		}
	}
	check("tls", "certs/server.crt", "CRT", 0o400)
	check("tls", "server.key", "KEY", 0o600)
	check("cfg", "etcd.conf", "name: m1", 0o644)
	check("cfg", "bin", "\x00\x01", 0)
	check("info", "name", "m1", 0)
	check("info", "labels", "app=\"etcd\"\nmember=\"m1\"", 0)
	check("proj", "c", "name: m1", 0)
	check("proj", "namespace", "ns", 0)
	if st, err := os.Stat(dirs["data"]); err != nil || !st.IsDir() {
		t.Fatalf("emptyDir: %v", err)
	}
	if ents, err := os.ReadDir(dirs["opt"]); err != nil || len(ents) != 0 {
		t.Fatalf("optional missing secret: %v %v", ents, err)
	}

	c := &v1.Container{VolumeMounts: []v1.VolumeMount{
		{Name: "data", MountPath: "/var/lib/etcd/member", SubPathExpr: "$(POD_NAME)"},
		{Name: "cfg", MountPath: "/etc/etcd", ReadOnly: true},
		{Name: "data", MountPath: "/var/lib/etcd/"},
	}}
	mounts, err := containerMounts(c, dirs, envLookup([]string{"POD_NAME=m1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []mountSpec{
		{Source: dirs["cfg"], Target: "/etc/etcd", ReadOnly: true},
		{Source: dirs["data"], Target: "/var/lib/etcd"},
		{Source: filepath.Join(dirs["data"], "m1"), Target: "/var/lib/etcd/member"},
	}
	if len(mounts) != 3 || mounts[0] != want[0] || mounts[1] != want[1] || mounts[2] != want[2] {
		t.Fatalf("mounts = %+v\nwant %+v", mounts, want)
	}
	if _, err := os.Stat(filepath.Join(dirs["data"], "m1")); err != nil {
		t.Fatalf("subPath dir not created: %v", err)
	}

	// A missing non-optional secret fails the volume (pod stays ContainerCreating).
	pod.Spec.Volumes = []v1.Volume{{Name: "x", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "absent"}}}}
	if _, err := pc.prepareVolumes(context.Background(), root); err == nil {
		t.Fatal("missing secret accepted")
	}
}
