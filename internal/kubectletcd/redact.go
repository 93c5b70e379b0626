package kubectletcd

import (
	"encoding/json"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Redacted replaces a value the support bundle must not carry.
const Redacted = "REDACTED"

// credentialName matches the names of variables and flags that hold credentials
// (AWS_SECRET_ACCESS_KEY, ETCD_AUTH_TOKEN, DB_PASSWORD, --client-secret, ...), not
// those that hold paths to them (--key-file, --cert-file).
var credentialName = regexp.MustCompile(`(?i)(passw|secret|token|credential|access[-_]?key|api[-_]?key|private[-_]?key)`)

// isCredentialName: a literal value under this name is redacted. Names ending in
// _FILE, _PATH or _DIR hold where a credential is, not the credential.
func isCredentialName(name string) bool {
	u := strings.ToUpper(name)
	for _, suffix := range []string{"_FILE", "-FILE", "_PATH", "-PATH", "_DIR", "-DIR"} {
		if strings.HasSuffix(u, suffix) {
			return false
		}
	}
	return credentialName.MatchString(name)
}

// redactEnv blanks the literal values of credential-like variables; references to
// Secrets (valueFrom) name a Secret and key only and are kept.
func redactEnv(env []corev1.EnvVar) {
	for i := range env {
		if env[i].Value != "" && isCredentialName(env[i].Name) {
			env[i].Value = Redacted
		}
	}
}

// redactArgs blanks the values of credential-like --flag=value arguments.
func redactArgs(args []string) {
	for i, a := range args {
		if k, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") && isCredentialName(k) {
			args[i] = k + "=" + Redacted
		}
	}
}

func redactContainers(cs []corev1.Container) {
	for i := range cs {
		redactEnv(cs[i].Env)
		redactArgs(cs[i].Args)
		redactArgs(cs[i].Command)
	}
}

// redactMeta drops what an object's metadata carries besides its state: managed
// fields, and the last-applied configuration kubectl apply keeps, which holds whatever
// was applied.
func redactMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
}

// redactPod scrubs a pod for the bundle.
func redactPod(p *corev1.Pod) {
	redactMeta(&p.ObjectMeta)
	redactContainers(p.Spec.InitContainers)
	redactContainers(p.Spec.Containers)
	for i := range p.Spec.EphemeralContainers {
		redactEnv(p.Spec.EphemeralContainers[i].Env)
		redactArgs(p.Spec.EphemeralContainers[i].Args)
		redactArgs(p.Spec.EphemeralContainers[i].Command)
	}
}

// redactCluster scrubs an EtcdCluster: its member environment (spec.pod.etcdEnv).
func redactCluster(c *etcdv1beta2.EtcdCluster) {
	redactMeta(&c.ObjectMeta)
	if c.Spec.Pod != nil {
		redactEnv(c.Spec.Pod.EtcdEnv)
	}
}

// redactRestore scrubs an EtcdRestore: the cluster spec it carries as JSON may hold
// member environment too. A spec that does not parse is dropped whole.
func redactRestore(r *etcdv1beta2.EtcdRestore) {
	redactMeta(&r.ObjectMeta)
	raw, ok := r.Annotations[restoreClusterSpecAnnotation]
	if !ok {
		return
	}
	var spec etcdv1beta2.EtcdClusterSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		r.Annotations[restoreClusterSpecAnnotation] = Redacted + " (not a cluster spec)"
		return
	}
	if spec.Pod != nil {
		redactEnv(spec.Pod.EtcdEnv)
	}
	if b, err := json.Marshal(spec); err == nil {
		r.Annotations[restoreClusterSpecAnnotation] = string(b)
	}
}

// credentialInText finds "password=...", "secret: ...", "token=..." and the like in
// free text (logs, command output).
var credentialInText = regexp.MustCompile(`(?i)((?:passw(?:or)?d|secret(?:[-_]?access[-_]?key)?|access[-_]?key(?:[-_]?id)?|token|credentials?)["']?\s*[:=]\s*["']?)([^\s"',;}&]+)`)

// redactText blanks credential-looking assignments in free text.
func redactText(s string) string {
	return credentialInText.ReplaceAllString(s, "${1}"+Redacted)
}
