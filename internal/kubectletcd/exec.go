package kubectletcd

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// podExec is `kubectl exec` without a terminal or stdin: WebSocket first, SPDY for API
// servers that do not speak it.
type podExec struct {
	cfg *rest.Config
	cs  kubernetes.Interface
}

func (p *podExec) Exec(ctx context.Context, namespace, pod, container string, cmd []string) ([]byte, []byte, error) {
	req := p.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	u := req.URL()
	ws, err := remotecommand.NewWebSocketExecutor(p.cfg, "GET", u.String())
	if err != nil {
		return nil, nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(p.cfg, "POST", u)
	if err != nil {
		return nil, nil, err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, nil, err
	}
	var out, errb bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &limitWriter{w: &out, n: maxExecOutput}, Stderr: &limitWriter{w: &errb, n: maxExecOutput}})
	return out.Bytes(), errb.Bytes(), err
}

// maxExecOutput bounds what one exec keeps of each stream: etcdctl's answers are small,
// and a member image is the tenant's.
const maxExecOutput = 1 << 20

type limitWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return len(p), nil
	}
	q := p
	if len(q) > l.n {
		q = q[:l.n]
	}
	l.n -= len(q)
	if _, err := l.w.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

// etcdContainer is the name of the etcd container in a member pod (the chart's).
const etcdContainer = "etcd"

// etcdctlBase is the etcdctl invocation that reaches the member a pod runs from inside
// that pod, configured from the pod's own etcd flags as the chart rendered them: the
// client port of --listen-client-urls on loopback, and for a TLS member the server
// certificate it was given (--cert-file, --key-file; the chart's issued and static
// server certificates carry client-auth usage, which --client-cert-auth requires).
// Server verification is skipped for loopback only: the connection never leaves the
// pod, and a member's certificate need not name 127.0.0.1.
func etcdctlBase(pod *corev1.Pod) ([]string, error) { return etcdctlArgs(pod, 10*time.Second) }

// etcdctlArgs is etcdctlBase with a command timeout of its own.
func etcdctlArgs(pod *corev1.Pod, timeout time.Duration) ([]string, error) {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == etcdContainer {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return nil, fmt.Errorf("pod %s has no %q container", pod.Name, etcdContainer)
	}
	flags := map[string]string{}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
			flags[k] = v
		}
	}
	scheme, port := "http", "2379"
	if l := flags["--listen-client-urls"]; l != "" {
		first, _, _ := strings.Cut(l, ",")
		u, err := url.Parse(first)
		if err != nil || u.Port() == "" {
			return nil, fmt.Errorf("pod %s: --listen-client-urls %q has no port", pod.Name, l)
		}
		scheme, port = u.Scheme, u.Port()
	}
	args := []string{"etcdctl", "--endpoints=" + scheme + "://127.0.0.1:" + port, "--command-timeout=" + timeout.String(), "--dial-timeout=5s"}
	if scheme == "https" {
		args = append(args, "--insecure-transport=false", "--insecure-skip-tls-verify=true")
		if cert, key := flags["--cert-file"], flags["--key-file"]; cert != "" && key != "" {
			args = append(args, "--cert="+cert, "--key="+key)
		}
	}
	return args, nil
}
