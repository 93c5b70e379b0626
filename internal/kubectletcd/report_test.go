package kubectletcd

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// reportObjects are a cluster with two member pods, its backup and a restore from it,
// an unrelated backup, events, the aws Secret the backup names, and an operator pod
// whose spec carries a literal credential.
func reportObjects() []client.Object {
	op := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-operator-abc", Namespace: "etcd-operator-system", Labels: map[string]string{"control-plane": "etcd-operator"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager",
			Env: []corev1.EnvVar{{Name: "AWS_SECRET_ACCESS_KEY", Value: "operator-literal-secret"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	restore := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: "ns",
		Annotations: map[string]string{etcdv1beta2.RestoreBackupRefAnnotation: "nightly"}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "demo-copy"}}}
	other := s3Backup("unrelated")
	other.Spec.ClusterRef.Name = "another"
	return []client.Object{
		testCluster(), memberPod("demo-a", false), memberPod("demo-b", false), s3Backup("nightly"), other, restore, op,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "ns"}, Data: map[string][]byte{"credentials": []byte("secret-data-in-a-secret")}},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "EtcdCluster", Name: "demo"},
			Reason: "MemberAdded", Message: "added demo-c"},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2", Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "nightly-verify"},
			Reason: "Started", Message: "verification pod"},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e3", Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "unrelated-pod"},
			Reason: "Other", Message: "not ours"},
	}
}

func TestReportBundle(t *testing.T) {
	p := newTestPlugin(t, reportObjects()...)
	path := filepath.Join(t.TempDir(), "r.tar.gz")
	out, err := run(p.Plugin, nil, "report", "demo", "-f", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "support bundle "+path) {
		t.Errorf("output %q", out)
	}
	files := untar(t, path)
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"README.txt", "errors.txt", "etcdbackups.yaml", "etcdcluster.yaml",
		"etcdctl/demo-a.alarm-list.txt", "etcdctl/demo-a.endpoint-status.json", "etcdctl/demo-b.alarm-list.txt", "etcdctl/demo-b.endpoint-status.json",
		"etcdrestores.yaml", "events.txt", "events.yaml",
		"logs/members/demo-a.etcd.log", "logs/members/demo-a.etcd.previous.log", "logs/members/demo-b.etcd.log", "logs/members/demo-b.etcd.previous.log",
		"logs/operator/etcd-operator-system.etcd-operator-abc.manager.log",
		"operator-pods.yaml", "persistentvolumeclaims.yaml", "pods.yaml", "secrets.txt", "services.yaml", "status.txt", "status.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("bundle files\n%v\nwant\n%v", names, want)
	}
	for file, wantIn := range map[string]string{
		"etcdbackups.yaml":   "name: nightly",
		"etcdrestores.yaml":  "name: copy",
		"events.yaml":        "added demo-c",
		"events.txt":         "nightly-verify",
		"secrets.txt":        "aws\texists\t(named by etcdbackup/nightly s3.awsSecret)",
		"status.txt":         "leader demo-b",
		"pods.yaml":          "value: REDACTED",
		"operator-pods.yaml": "value: REDACTED",
	} {
		if !strings.Contains(files[file], wantIn) {
			t.Errorf("%s lacks %q:\n%s", file, wantIn, files[file])
		}
	}
	if strings.Contains(files["etcdbackups.yaml"], "unrelated") || strings.Contains(files["events.yaml"], "not ours") {
		t.Error("the bundle holds another cluster's objects")
	}
	for name, data := range files {
		for _, secret := range []string{"secret-data-in-a-secret", "operator-literal-secret", "jwt,priv-key"} {
			if strings.Contains(data, secret) {
				t.Errorf("%s holds %q", name, secret)
			}
		}
	}
	if *p.secretReads != 0 {
		t.Errorf("the report read Secret data %d times", *p.secretReads)
	}
}

// A directory bundle, without etcdctl; an existing target is refused, not overwritten.
func TestReportDirectory(t *testing.T) {
	p := newTestPlugin(t, reportObjects()...)
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, err := run(p.Plugin, nil, "report", "demo", "-f", dir, "--no-exec", "--operator-namespace", "elsewhere"); err != nil {
		t.Fatal(err)
	}
	if len(p.exec.commands()) != 0 {
		t.Errorf("--no-exec ran %v", p.exec.commands())
	}
	errs, err := os.ReadFile(filepath.Join(dir, "errors.txt"))
	if err != nil || !strings.Contains(string(errs), "no operator pod found (labels control-plane=etcd-operator or app.kubernetes.io/name=etcd-operator in namespace elsewhere)") {
		t.Errorf("errors.txt %q %v", errs, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "status.txt")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("status.txt %v %v", st, err)
	}
	if _, err := run(p.Plugin, nil, "report", "demo", "-f", dir); err == nil || !strings.Contains(err.Error(), "file exists") {
		t.Errorf("second report into %s: %v", dir, err)
	}
}

// With etcd authentication on, etcdctl is not run (it would need root's password).
func TestReportAuthClusterSkipsEtcdctl(t *testing.T) {
	objs := reportObjects()
	c := objs[0].(*etcdv1beta2.EtcdCluster)
	c.Annotations = map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
	p := newTestPlugin(t, objs...)
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, err := p.Report(context.Background(), "demo", ReportOptions{Path: dir}); err != nil {
		t.Fatal(err)
	}
	if len(p.exec.commands()) != 0 {
		t.Errorf("ran %v on an auth cluster", p.exec.commands())
	}
	note, _ := os.ReadFile(filepath.Join(dir, "etcdctl", "demo-a.txt"))
	if !strings.Contains(string(note), "etcd authentication is on") {
		t.Errorf("note %q", note)
	}
	secrets, _ := os.ReadFile(filepath.Join(dir, "secrets.txt"))
	if !strings.Contains(string(secrets), "demo-etcd-root\tnot readable") {
		t.Errorf("secrets.txt %q", secrets)
	}
}

func untar(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, _ := f.Stat(); st.Mode().Perm() != 0o600 {
		t.Errorf("bundle mode %v, want 0600", st.Mode().Perm())
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		top, rel, _ := strings.Cut(h.Name, "/")
		if top != "r" {
			t.Errorf("entry %s not under r/", h.Name)
		}
		b, _ := io.ReadAll(tr)
		files[rel] = string(b)
	}
}
