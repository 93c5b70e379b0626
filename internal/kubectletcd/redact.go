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
// (AWS_SECRET_ACCESS_KEY, ETCD_AUTH_TOKEN, DB_PASSWORD, --client-secret, ...).
var credentialName = regexp.MustCompile(`(?i)(passw|secret|token|credential|access[-_]?key|api[-_]?key|private[-_]?key)`)

// credentialNames are names that hold credentials without saying so: etcdctl's
// --user and ETCDCTL_USER take user:password, and -p is the usual short password flag.
var credentialNames = map[string]bool{"user": true, "etcdctl_user": true, "p": true}

// pathSuffixes mark names that hold where a credential is (--key-file, PASSWORD_FILE),
// not the credential.
var pathSuffixes = []string{"_file", "_path", "_dir"}

// normName is a variable or flag name without its dashes, lower case, - as _.
func normName(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimLeft(name, "-")), "-", "_")
}

// isCredentialName: a value under this name is redacted (unless isPathName and the value
// looks like a path).
func isCredentialName(name string) bool {
	n := normName(name)
	return credentialNames[n] || credentialName.MatchString(n)
}

func isPathName(name string) bool {
	n := normName(name)
	for _, suffix := range pathSuffixes {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// looksLikePath: an absolute or relative file path, one word. Anything else under a
// _FILE name may be the credential itself, put there by mistake.
func looksLikePath(v string) bool {
	if strings.ContainsAny(v, " \t\n:@") {
		return false
	}
	for _, pre := range []string{"/", "./", "../", "~/"} {
		if strings.HasPrefix(v, pre) {
			return true
		}
	}
	return false
}

// redactsValue says whether the value v under name must go.
func redactsValue(name, v string) bool {
	if !isCredentialName(name) {
		return false
	}
	return !(isPathName(name) && looksLikePath(v))
}

// redactEnv blanks the literal values of credential-like variables and scrubs the rest
// as free text (a DATABASE_URL with a password in it); references to Secrets
// (valueFrom) name a Secret and key only and are kept.
func redactEnv(env []corev1.EnvVar) {
	for i := range env {
		if env[i].Value == "" {
			continue
		}
		if redactsValue(env[i].Name, env[i].Value) {
			env[i].Value = Redacted
		} else {
			env[i].Value = redactText(env[i].Value)
		}
	}
}

// redactArgs blanks the values of credential-like flags, as --flag=value or as
// --flag value (two arguments), and scrubs every other argument as free text (the
// script of sh -c, a URL with user-info).
func redactArgs(args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || strings.ContainsAny(a, " \t\n") {
			args[i] = redactText(a)
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			if redactsValue(k, v) {
				args[i] = k + "=" + Redacted
			} else {
				args[i] = redactText(a)
			}
			continue
		}
		if isCredentialName(a) && i+1 < len(args) {
			if redactsValue(a, args[i+1]) {
				args[i+1] = Redacted
			} else {
				args[i+1] = redactText(args[i+1])
			}
			i++
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

// redactCluster scrubs an EtcdCluster: its member environment (spec.pod.etcdEnv) and
// the text of its status (an error may quote an endpoint or a command line).
func redactCluster(c *etcdv1beta2.EtcdCluster) {
	redactMeta(&c.ObjectMeta)
	if c.Spec.Pod != nil {
		redactEnv(c.Spec.Pod.EtcdEnv)
	}
	c.Status.Reason = redactText(c.Status.Reason)
	for i := range c.Status.Conditions {
		c.Status.Conditions[i].Message = redactText(c.Status.Conditions[i].Message)
	}
}

// redactConditions scrubs the messages of conditions.
func redactConditions(cs []metav1.Condition) {
	for i := range cs {
		cs[i].Message = redactText(cs[i].Message)
	}
}

// redactS3 strips user-info from an S3 endpoint URL.
func redactS3(s3 *etcdv1beta2.S3BackupSource) {
	if s3 != nil {
		s3.Endpoint = redactText(s3.Endpoint)
	}
}

// redactBackup scrubs an EtcdBackup: endpoints (S3's and etcd's) may carry user-info,
// and its status text may quote them.
func redactBackup(eb *etcdv1beta2.EtcdBackup) {
	redactMeta(&eb.ObjectMeta)
	redactS3(eb.Spec.S3)
	for i := range eb.Spec.EtcdEndpoints {
		eb.Spec.EtcdEndpoints[i] = redactText(eb.Spec.EtcdEndpoints[i])
	}
	eb.Status.Reason = redactText(eb.Status.Reason)
	redactConditions(eb.Status.Conditions)
}

// redactRestore scrubs an EtcdRestore: the cluster spec it carries as JSON may hold
// member environment too. A spec that does not parse is dropped whole.
func redactRestore(r *etcdv1beta2.EtcdRestore) {
	redactMeta(&r.ObjectMeta)
	redactS3(r.Spec.S3)
	r.Status.Reason = redactText(r.Status.Reason)
	redactConditions(r.Status.Conditions)
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

// URL user-info (scheme://user:password@host) anywhere in text.
var urlUserInfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/\s"'<>]+@`)

// credentialFlagInText finds a credential-like flag and its value, as --flag=value or
// --flag value, in a command line written out as text.
var credentialFlagInText = regexp.MustCompile(`(?i)(?:^|\s)(--?(?:[a-z0-9_-]*(?:passw|secret|token|credential|access[-_]?key|api[-_]?key|private[-_]?key)[a-z0-9_-]*|user|p))(=|\s+)("[^"]*"|'[^']*'|[^\s"']+)`)

// credentialInText finds "password=...", "secret: ...", "token=...", "pass=...",
// "ETCDCTL_USER=..." and the like in free text (logs, command output, messages).
var credentialInText = regexp.MustCompile(`(?i)((?:pass(?:w(?:or)?d)?|secret(?:[-_]?access[-_]?key)?|access[-_]?key(?:[-_]?id)?|token|credentials?|etcdctl[-_]user)["']?\s*[:=]\s*["']?)([^\s"',;}&]+)`)

// bearerInText finds an HTTP bearer token.
var bearerInText = regexp.MustCompile(`(?i)\b(bearer\s+)([^\s"',;}&]+)`)

// redactText blanks credentials in free text: URL user-info, the values of
// credential-like flags and assignments, bearer tokens.
func redactText(s string) string {
	s = urlUserInfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = credentialFlagInText.ReplaceAllStringFunc(s, func(m string) string {
		sub := credentialFlagInText.FindStringSubmatch(m)
		name, sep, v := sub[1], sub[2], strings.Trim(sub[3], `"'`)
		if !redactsValue(name, v) {
			return m
		}
		return strings.TrimSuffix(m, sub[1]+sub[2]+sub[3]) + name + sep + Redacted
	})
	s = credentialInText.ReplaceAllString(s, "${1}"+Redacted)
	return bearerInText.ReplaceAllString(s, "${1}"+Redacted)
}
