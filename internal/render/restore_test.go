package render

import (
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

const testSHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// restoredCluster is the CoreOS sample annotated as the restore controller would, and
// the restore step the cluster controller passes once it has verified the annotation.
func restoredCluster(t *testing.T, s3 v1beta2.S3BackupSource, sha string) (*v1beta2.EtcdCluster, *RestoreStep) {
	t.Helper()
	c := coreosSample("3.6.16")
	src := RestoreSource{Restore: "r1", UID: "uid-r1", S3: &s3, SHA256: sha}
	ann, err := src.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	c.Annotations = ann
	return c, &RestoreStep{Source: src, Image: "registry.example/etcd-operator:v0.1.0"}
}

func TestRestoreInitContainer(t *testing.T) {
	s3 := v1beta2.S3BackupSource{Path: "bucket/backups/db", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}
	c, step := restoredCluster(t, s3, strings.ToUpper(testSHA))
	members := bootstrap(c, 3, "cluster.local")
	// A member joining later (e.g. a replacement) starts empty and syncs from its peers.
	members = append(members, Member{Name: "example-0003", ID: "abc", InitialClusterState: StateExisting,
		InitialCluster: members[0].InitialCluster + "," + InitialClusterEntry(c, "example-0003", "cluster.local")})
	got := mustRender(t, Input{Cluster: c, ClusterDomain: "cluster.local", Members: members, Restore: step})

	for _, m := range members[:3] {
		p := got.pods[m.Name]
		if len(p.Spec.InitContainers) != 1 {
			t.Fatalf("%s: init containers %+v", m.Name, p.Spec.InitContainers)
		}
		ic := p.Spec.InitContainers[0]
		if ic.Name != RestoreContainerName || ic.Image != "registry.example/etcd-operator:v0.1.0" ||
			!reflect.DeepEqual(ic.Command, []string{OperatorCommand, "restore"}) {
			t.Errorf("%s: init container %s image %s command %v", m.Name, ic.Name, ic.Image, ic.Command)
		}
		wantArgs := append([]string{
			"--s3-path=bucket/backups/db",
			"--aws-secret-dir=" + RestoreAWSDir,
			"--s3-endpoint=http://minio:9000",
			"--s3-force-path-style",
			"--checksum=" + testSHA,
		}, restoredMemberArgs(c, m)...)
		if !reflect.DeepEqual(ic.Args, wantArgs) {
			t.Errorf("%s: args\n got %q\nwant %q", m.Name, ic.Args, wantArgs)
		}
		if ic.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Errorf("%s: termination message policy %q: the error would not reach the restore's status", m.Name, ic.TerminationMessagePolicy)
		}
		// What the restore step writes must be what etcd then starts with.
		etcdArgs := etcdContainer(t, p).Args
		for _, f := range []string{"name", "data-dir", "initial-advertise-peer-urls", "initial-cluster", "initial-cluster-token"} {
			want, _ := flag(t, etcdArgs, f)
			if have, _ := flag(t, ic.Args, f); have != want {
				t.Errorf("%s: --%s: restore %q, etcd %q", m.Name, f, have, want)
			}
		}
		// Same data volume at the same place; the secret read-only.
		mounts := map[string]corev1.VolumeMount{}
		for _, vm := range ic.VolumeMounts {
			mounts[vm.Name] = vm
		}
		if vm := mounts[DataVolumeName]; vm.MountPath != DataMountPath || vm.ReadOnly {
			t.Errorf("%s: data mount %+v", m.Name, vm)
		}
		if vm := mounts[RestoreAWSVolumeName]; vm.MountPath != RestoreAWSDir || !vm.ReadOnly {
			t.Errorf("%s: aws mount %+v", m.Name, vm)
		}
		var secretVol *corev1.Volume
		for i, v := range p.Spec.Volumes {
			if v.Name == RestoreAWSVolumeName {
				secretVol = &p.Spec.Volumes[i]
			}
		}
		if secretVol == nil || secretVol.Secret == nil || secretVol.Secret.SecretName != "aws" {
			t.Errorf("%s: aws volume %+v", m.Name, secretVol)
		}
	}
	joiner := got.pods["example-0003"]
	if len(joiner.Spec.InitContainers) != 0 {
		t.Errorf("joining member has init containers %+v", joiner.Spec.InitContainers)
	}
	for _, v := range joiner.Spec.Volumes {
		if v.Name == RestoreAWSVolumeName {
			t.Errorf("joining member mounts the awsSecret")
		}
	}
}

func TestRestoreOptionalFlags(t *testing.T) {
	// AWS itself: no endpoint, virtual-host style; a backup without checksum.
	c, step := restoredCluster(t, v1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws"}, "")
	got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, ""), Restore: step})
	args := got.pods["example-0000"].Spec.InitContainers[0].Args
	for _, a := range args {
		for _, f := range []string{"--s3-endpoint", "--s3-force-path-style", "--checksum"} {
			if strings.HasPrefix(a, f) {
				t.Errorf("unexpected %s in %q", f, args)
			}
		}
	}
}

func TestNoRestoreNoInitContainer(t *testing.T) {
	c := coreosSample("3.6.16")
	got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 3, "")})
	for name, p := range got.pods {
		if len(p.Spec.InitContainers) != 0 {
			t.Errorf("%s: init containers without a restore: %+v", name, p.Spec.InitContainers)
		}
	}
}

func TestRestoreAnnotationErrors(t *testing.T) {
	good, _ := restoredCluster(t, v1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws"}, testSHA)
	for _, tc := range []struct {
		name, value, mention string
	}{
		{"not json", "{", AnnotationRestore},
		{"unknown field", `{"restore":"r","s3":{"path":"b/k","awsSecret":"a"},"extra":1}`, AnnotationRestore},
		{"no source", `{"restore":"r"}`, "s3 or pvc"},
		{"bad path", `{"restore":"r","s3":{"path":"nokey","awsSecret":"a"}}`, "<bucket>/<key>"},
		{"no secret", `{"restore":"r","s3":{"path":"b/k"}}`, "awsSecret"},
		{"bad sha", `{"restore":"r","s3":{"path":"b/k","awsSecret":"a"},"sha256":"xyz"}`, "sha256"},
		{"both sources", `{"restore":"r","s3":{"path":"b/k","awsSecret":"a"},"pvc":{"claimName":"c","path":"k"}}`, "both"},
		{"no claim", `{"restore":"r","pvc":{"path":"k"}}`, "claimName"},
		{"pvc root", `{"restore":"r","pvc":{"claimName":"c","path":"/.."}}`, "names no file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good.DeepCopy()
			c.Annotations[AnnotationRestore] = tc.value
			if _, err := Restore(c); err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %v should mention %q", err, tc.mention)
			}
		})
	}
	src, err := Restore(good)
	if err != nil || src.Restore != "r1" || src.UID != "uid-r1" || src.S3.Path != "b/k" {
		t.Errorf("Restore(good) = %+v, %v", src, err)
	}
	if src, err := Restore(coreosSample("3.6.16")); src != nil || err != nil {
		t.Errorf("plain cluster: %+v, %v", src, err)
	}
	// A step the caller passes is checked as strictly.
	for name, step := range map[string]*RestoreStep{
		"no image":  {Source: *src},
		"no source": {Image: "op:v1"},
	} {
		if _, err := sharedRenderer.Render(Input{Cluster: good, Members: bootstrap(good, 1, ""), Restore: step}); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

// The restore values pass Helm's linter like the others.
func TestHelmLintRestore(t *testing.T) {
	c, step := restoredCluster(t, v1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}, testSHA)
	vals, err := Values(Input{Cluster: c, Members: bootstrap(c, 3, ""), Restore: step})
	if err != nil {
		t.Fatal(err)
	}
	l := lint.All(chartDir, vals, "default", false)
	for _, m := range l.Messages {
		if m.Severity > support.InfoSev {
			t.Errorf("helm lint: %s", m.Error())
		}
	}
}

// A backup on a claim: the init container reads it from the claim mounted read-only and
// gets no S3 flags and no awsSecret; the path is mapped below the claim's root exactly as
// the PVC backup maps it.
func TestRestoreFromPVCInitContainer(t *testing.T) {
	c := coreosSample("3.6.16")
	pvcSrc := RestoreSource{Restore: "r1", UID: "uid-r1", PVC: &v1beta2.PVCBackupSource{ClaimName: "backups", Path: "/snaps/../snaps/one.db"}}
	ann, err := pvcSrc.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	c.Annotations = ann
	step := &RestoreStep{Source: pvcSrc, Image: "op:v1"}
	members := bootstrap(c, 3, "cluster.local")
	got := mustRender(t, Input{Cluster: c, ClusterDomain: "cluster.local", Members: members, Restore: step})
	for _, m := range members {
		p := got.pods[m.Name]
		if len(p.Spec.InitContainers) != 1 {
			t.Fatalf("%s: init containers %+v", m.Name, p.Spec.InitContainers)
		}
		ic := p.Spec.InitContainers[0]
		wantArgs := append([]string{
			"--dir=" + RestoreBackupDir,
			"--key=snaps/one.db",
		}, restoredMemberArgs(c, m)...)
		if !reflect.DeepEqual(ic.Args, wantArgs) {
			t.Errorf("%s: args\n got %q\nwant %q", m.Name, ic.Args, wantArgs)
		}
		mounts := map[string]corev1.VolumeMount{}
		for _, vm := range ic.VolumeMounts {
			mounts[vm.Name] = vm
		}
		if vm, ok := mounts[RestoreBackupVolumeName]; !ok || vm.MountPath != RestoreBackupDir || !vm.ReadOnly {
			t.Errorf("%s: backup mount %+v", m.Name, vm)
		}
		if _, ok := mounts[RestoreAWSVolumeName]; ok {
			t.Errorf("%s: a PVC restore mounts the awsSecret", m.Name)
		}
		if vm := mounts[DataVolumeName]; vm.MountPath != DataMountPath || vm.ReadOnly {
			t.Errorf("%s: data mount %+v", m.Name, vm)
		}
		var vol *corev1.Volume
		for i, v := range p.Spec.Volumes {
			if v.Name == RestoreBackupVolumeName {
				vol = &p.Spec.Volumes[i]
			}
			if v.Name == RestoreAWSVolumeName {
				t.Errorf("%s: awsSecret volume in a PVC restore", m.Name)
			}
		}
		if vol == nil || vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != "backups" || !vol.PersistentVolumeClaim.ReadOnly {
			t.Errorf("%s: backup volume %+v", m.Name, vol)
		}
		// The etcd container never sees the backups.
		for _, vm := range etcdContainer(t, p).VolumeMounts {
			if vm.Name == RestoreBackupVolumeName {
				t.Errorf("%s: etcd container mounts the backup claim", m.Name)
			}
		}
	}
	src, err := Restore(c)
	if err != nil || src.Location() != "pvc://backups/snaps/one.db" {
		t.Errorf("location %q, %v", src.Location(), err)
	}
	vals, err := Values(Input{Cluster: c, ClusterDomain: "cluster.local", Members: members, Restore: step})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range lint.All(chartDir, vals, "default", false).Messages {
		if m.Severity > support.InfoSev {
			t.Errorf("helm lint: %s", m.Error())
		}
	}
}

func TestCleanBackupPath(t *testing.T) {
	for in, want := range map[string]string{"a/b.db": "a/b.db", "/a//b.db": "a/b.db", "../../etc/x": "etc/x", "a/../b": "b"} {
		if got, err := CleanBackupPath(in); err != nil || got != want {
			t.Errorf("CleanBackupPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/", "..", "a/.."} {
		if got, err := CleanBackupPath(in); err == nil {
			t.Errorf("CleanBackupPath(%q) = %q, want an error", in, got)
		}
	}
}

// restoredMemberArgs are the restore step's arguments naming the member m of c it
// restores, after those naming the backup.
func restoredMemberArgs(c *v1beta2.EtcdCluster, m Member) []string {
	return []string{
		"--name=" + m.Name,
		"--data-dir=" + DataDir,
		"--initial-advertise-peer-urls=" + PeerURL(c, m.Name, "cluster.local"),
		"--initial-cluster=" + m.InitialCluster,
		"--initial-cluster-token=" + ClusterToken(c),
	}
}
