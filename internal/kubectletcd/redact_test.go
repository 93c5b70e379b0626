package kubectletcd

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
