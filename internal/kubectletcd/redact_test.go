package kubectletcd

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestRedactEnvAndArgs(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "AWS_SECRET_ACCESS_KEY", Value: "s3cr3t"},
		{Name: "AWS_ACCESS_KEY_ID", Value: "AKIA"},
		{Name: "ETCD_AUTH_TOKEN", Value: "jwt,priv-key=/k"},
		{Name: "DB_PASSWORD", Value: "pw"},
		{Name: "GITHUB_TOKEN", Value: "ghp"},
		{Name: "api_key", Value: "k"},
		{Name: "TLS_PRIVATE_KEY", Value: "-----BEGIN"},
		{Name: "PASSWORD_FILE", Value: "/etc/pw"},
		{Name: "ETCD_SNAPSHOT_COUNT", Value: "10000"},
		{Name: "POD_NAME", Value: "demo-a"},
		{Name: "FROM_SECRET_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	}
	redactEnv(env)
	kept := map[string]string{"PASSWORD_FILE": "/etc/pw", "ETCD_SNAPSHOT_COUNT": "10000", "POD_NAME": "demo-a", "FROM_SECRET_PASSWORD": ""}
	for _, e := range env {
		want, ok := kept[e.Name]
		if !ok {
			want = Redacted
		}
		if e.Value != want {
			t.Errorf("%s = %q, want %q", e.Name, e.Value, want)
		}
	}
	if env[10].ValueFrom == nil {
		t.Error("a Secret reference was dropped")
	}

	args := []string{"--password=pw", "--client-secret=x", "--key-file=/etc/k", "--cert-file=/etc/c", "--client-cert-auth=true", "--token=t", "--name=a", "positional"}
	redactArgs(args)
	if got := strings.Join(args, " "); got != "--password=REDACTED --client-secret=REDACTED --key-file=/etc/k --cert-file=/etc/c --client-cert-auth=true --token=REDACTED --name=a positional" {
		t.Errorf("args: %s", got)
	}
}

func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		`password=hunter2 next`:                         `password=REDACTED next`,
		`{"password":"hunter2","user":"root"}`:          `{"password":"REDACTED","user":"root"}`,
		`aws_secret_access_key = wJalr`:                 `aws_secret_access_key = REDACTED`,
		`Authorization token: abc.def`:                  `Authorization token: REDACTED`,
		`level=info msg="member added" id=8e9e05c52164`: `level=info msg="member added" id=8e9e05c52164`,
		`credentials=AKIA/x`:                            `credentials=REDACTED`,
	} {
		if got := redactText(in); got != want {
			t.Errorf("redactText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactObjects(t *testing.T) {
	pod := memberPod("demo-a", false)
	pod.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"env":"AWS_SECRET_ACCESS_KEY=x"}`, "keep": "me"}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	pod.Spec.InitContainers = []corev1.Container{{Name: "restore", Env: []corev1.EnvVar{{Name: "S3_SECRET", Value: "x"}}}}
	redactPod(pod)
	if _, ok := pod.Annotations[corev1.LastAppliedConfigAnnotation]; ok || pod.Annotations["keep"] != "me" || pod.ManagedFields != nil {
		t.Errorf("metadata %v %v", pod.Annotations, pod.ManagedFields)
	}
	if pod.Spec.InitContainers[0].Env[0].Value != Redacted || pod.Spec.Containers[0].Env[1].Value != Redacted {
		t.Errorf("env not redacted: %+v %+v", pod.Spec.InitContainers[0].Env, pod.Spec.Containers[0].Env)
	}

	c := testCluster()
	c.Spec.Pod = &etcdv1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_AUTH_TOKEN", Value: "jwt"}}}
	redactCluster(c)
	if c.Spec.Pod.EtcdEnv[0].Value != Redacted {
		t.Errorf("cluster env %+v", c.Spec.Pod.EtcdEnv)
	}

	r := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		restoreClusterSpecAnnotation: `{"size":3,"pod":{"etcdEnv":[{"name":"MY_TOKEN","value":"abc"}]}}`}}}
	redactRestore(r)
	if a := r.Annotations[restoreClusterSpecAnnotation]; strings.Contains(a, "abc") || !strings.Contains(a, Redacted) || !strings.Contains(a, `"size":3`) {
		t.Errorf("restore spec annotation %s", a)
	}
	r.Annotations[restoreClusterSpecAnnotation] = `not json password=x`
	redactRestore(r)
	if a := r.Annotations[restoreClusterSpecAnnotation]; strings.Contains(a, "password=x") {
		t.Errorf("unparsable spec kept: %s", a)
	}
}

// The gaps a review found: each input must lose its secret, and what is not a secret
// must stay readable.
func TestRedactReviewGaps(t *testing.T) {
	args := []struct {
		in, want []string
	}{
		{[]string{"etcdctl", "--password", "hunter2", "get", "k"}, []string{"etcdctl", "--password", Redacted, "get", "k"}},
		{[]string{"etcdctl", "--user", "root:hunter2"}, []string{"etcdctl", "--user", Redacted}},
		{[]string{"mysql", "-p=hunter2"}, []string{"mysql", "-p=" + Redacted}},
		{[]string{"sh", "-c", `etcd --password=hunter2 --name=a`}, []string{"sh", "-c", `etcd --password=` + Redacted + ` --name=a`}},
		{[]string{"sh", "-c", `etcdctl --user root:hunter2 get k`}, []string{"sh", "-c", `etcdctl --user ` + Redacted + ` get k`}},
		{[]string{"--password-file", "/etc/pw", "--password-file=./pw"}, []string{"--password-file", "/etc/pw", "--password-file=./pw"}},
		{[]string{"--password-file=hunter2"}, []string{"--password-file=" + Redacted}},
		{[]string{"--endpoints=https://AKIA:hunter2@minio:9000"}, []string{"--endpoints=https://" + Redacted + "@minio:9000"}},
		{[]string{"--name", "demo-a", "--client-cert-auth"}, []string{"--name", "demo-a", "--client-cert-auth"}},
	}
	for _, c := range args {
		got := append([]string(nil), c.in...)
		redactArgs(got)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("redactArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}

	env := []corev1.EnvVar{
		{Name: "ETCDCTL_USER", Value: "root:hunter2"},
		{Name: "DATABASE_URL", Value: "postgres://u:hunter2@db:5432/x"},
		{Name: "PASSWORD_FILE", Value: "hunter2"},
		{Name: "ETCD_PASSWORD_FILE", Value: "/etc/pw"},
		{Name: "TOKEN_PATH", Value: "/var/run/t"},
		{Name: "ENDPOINT", Value: "http://minio:9000"},
	}
	redactEnv(env)
	for i, want := range []string{Redacted, "postgres://" + Redacted + "@db:5432/x", Redacted, "/etc/pw", "/var/run/t", "http://minio:9000"} {
		if env[i].Value != want {
			t.Errorf("env %s = %q, want %q", env[i].Name, env[i].Value, want)
		}
	}

	for in, want := range map[string]string{
		`running etcdctl --user root:hunter2 get k`:       `running etcdctl --user ` + Redacted + ` get k`,
		`Authorization: Bearer hunter2`:                   `Authorization: Bearer ` + Redacted,
		`pass=hunter2 next`:                               `pass=` + Redacted + ` next`,
		`ETCDCTL_USER=root:hunter2`:                       `ETCDCTL_USER=` + Redacted,
		`dial https://AKIA:hunter2@s3.example/b: refused`: `dial https://` + Redacted + `@s3.example/b: refused`,
		`sh -c "etcd --password 'hunter 2'"`:              `sh -c "etcd --password ` + Redacted + `"`,
		`--password-file /etc/pw`:                         `--password-file /etc/pw`,
		`get https://u:p@ss@host/x and mail a@b.c`:        `get https://` + Redacted + `@host/x and mail a@b.c`,
		`member demo-a --name demo-a is healthy`:          `member demo-a --name demo-a is healthy`,
	} {
		if got := redactText(in); got != want {
			t.Errorf("redactText(%q) = %q, want %q", in, got, want)
		}
	}
}

// Objects whose fields may carry user-info or quote credentials in status text.
func TestRedactBackupRestoreClusterText(t *testing.T) {
	eb := s3Backup("nightly")
	eb.Spec.S3.Endpoint = "https://AKIA:hunter2@minio:9000"
	eb.Spec.EtcdEndpoints = []string{"http://root:hunter2@demo-client:2379"}
	eb.Status.Reason = "upload to https://AKIA:hunter2@minio:9000 failed"
	eb.Status.Conditions = append(eb.Status.Conditions, metav1.Condition{Type: etcdv1beta2.BackupConditionSucceeded, Status: metav1.ConditionFalse, Reason: "X", Message: "etcdctl --user root:hunter2 failed"})
	redactBackup(eb)

	er := &etcdv1beta2.EtcdRestore{Spec: etcdv1beta2.EtcdRestoreSpec{RestoreSource: etcdv1beta2.RestoreSource{S3: &etcdv1beta2.S3BackupSource{Endpoint: "https://AKIA:hunter2@minio"}}}}
	er.Status.Reason = "password=hunter2"
	er.Status.Conditions = []metav1.Condition{{Message: "Bearer hunter2"}}
	redactRestore(er)

	c := testCluster()
	c.Status.Reason = "token: hunter2"
	c.Status.Conditions[0].Message = "dial http://u:hunter2@x"
	redactCluster(c)

	for name, v := range map[string]any{"backup": eb, "restore": er, "cluster": c} {
		out, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "hunter2") {
			t.Errorf("%s keeps a credential:\n%s", name, out)
		}
	}
	if eb.Spec.S3.Endpoint != "https://"+Redacted+"@minio:9000" || eb.Spec.S3.AWSSecret != "aws" {
		t.Errorf("backup s3 %+v", eb.Spec.S3)
	}

	// The status screen (status.txt/status.yaml in a bundle, and `status` itself).
	c = testCluster()
	c.Status.Conditions = append(c.Status.Conditions, etcdv1beta2.ClusterCondition{Type: etcdv1beta2.ClusterConditionDataConsistent, Status: corev1.ConditionFalse, Reason: "R", Message: "password=hunter2"})
	eb = s3Backup("nightly")
	eb.Status.Succeeded, eb.Status.Reason = false, "https://AKIA:hunter2@minio refused"
	st := summarize(c, nil, []etcdv1beta2.EtcdBackup{*eb})
	out, _ := yaml.Marshal(st)
	if strings.Contains(string(out), "hunter2") {
		t.Errorf("status keeps a credential:\n%s", out)
	}
}
