package kubectletcd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// ReportOptions are `report`'s flags.
type ReportOptions struct {
	// Path is where the bundle goes: a .tar.gz/.tgz file, else a directory. Empty:
	// etcd-report-<namespace>-<cluster>-<time>.tar.gz in the working directory.
	Path string
	// OperatorNamespace limits the search for the operator's pods; empty: all
	// namespaces (where the caller may list pods).
	OperatorNamespace string
	// LogLines is how many lines of each log are kept (the last ones).
	LogLines int64
	// NoExec skips etcdctl in the members.
	NoExec bool
}

// Bounds of what a bundle takes from each log.
const (
	defaultLogLines = 5000
	maxLogBytes     = 8 << 20
)

// operatorSelectors select the operator's pods in the kustomize/OLM install
// (control-plane) and the Helm chart (app.kubernetes.io/name).
var operatorSelectors = []labels.Set{
	{"control-plane": "etcd-operator"},
	{"app.kubernetes.io/name": "etcd-operator"},
}

// bundle is the support bundle being gathered: file name to contents, and what could
// not be gathered.
type bundle struct {
	files  map[string][]byte
	errors []string
}

func (b *bundle) add(name string, data []byte) { b.files[name] = data }

func (b *bundle) fail(format string, args ...any) {
	b.errors = append(b.errors, fmt.Sprintf(format, args...))
}

func (b *bundle) addYAML(name string, v any) {
	out, err := yaml.Marshal(v)
	if err != nil {
		b.fail("%s: %v", name, err)
		return
	}
	b.add(name, out)
}

// ReportResult says where the bundle is and what it holds.
type ReportResult struct {
	Path   string   `json:"path"`
	Files  []string `json:"files"`
	Errors []string `json:"errors,omitempty"`
}

// Report gathers a support bundle for the cluster name: its objects and those of its
// backups and restores, events, member and operator logs, and etcdctl's view of each
// member. No Secret's data is read (addSecretRefs asks for metadata only);
// credential-like values in pod specs, object specs, status text and logs are redacted
// (redact.go).
func (p *Plugin) Report(ctx context.Context, name string, o ReportOptions) (*ReportResult, error) {
	c, err := p.getCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	if o.LogLines <= 0 {
		o.LogLines = defaultLogLines
	}
	now := p.Now()
	b := &bundle{files: map[string][]byte{}}

	pods, ignored, err := p.memberPods(ctx, c)
	if err != nil {
		b.fail("member pods: %v", err)
	}
	backups, err := p.clusterBackups(ctx, c)
	if err != nil {
		b.fail("EtcdBackups: %v", err)
	}
	var restoreList etcdv1beta2.EtcdRestoreList
	var restores []etcdv1beta2.EtcdRestore
	if err := p.C.List(ctx, &restoreList, client.InNamespace(c.Namespace)); err != nil {
		b.fail("EtcdRestores: %v", err)
	}
	restores = restoresOf(c, backups, restoreList.Items)

	// The screen `status` shows, then the objects themselves.
	st := summarize(c, pods, backups)
	st.IgnoredPods = ignored
	var screen bytes.Buffer
	if err := PrintStatus(&screen, OutputTable, st, now); err != nil {
		b.fail("status: %v", err)
	}
	b.add("status.txt", screen.Bytes())
	b.addYAML("status.yaml", st)

	cl := c.DeepCopy()
	redactCluster(cl)
	b.addYAML("etcdcluster.yaml", cl)
	for i := range backups {
		redactBackup(&backups[i])
	}
	b.addYAML("etcdbackups.yaml", backups)
	for i := range restores {
		redactRestore(&restores[i])
	}
	b.addYAML("etcdrestores.yaml", restores)
	scrubbed := make([]corev1.Pod, len(pods))
	for i := range pods {
		scrubbed[i] = *pods[i].DeepCopy()
		redactPod(&scrubbed[i])
	}
	b.addYAML("pods.yaml", scrubbed)
	p.addOwned(ctx, b, c)
	p.addSecretRefs(ctx, b, c, backups, restores)
	p.addEvents(ctx, b, c, pods, backups, restores)

	for i := range pods {
		p.addLogs(ctx, b, "logs/members/", &pods[i], o.LogLines)
	}
	p.addOperator(ctx, b, o)

	if !o.NoExec {
		on, _ := etcdv1beta2.AuthOf(c)
		for i := range pods {
			p.addEtcdctl(ctx, b, &pods[i], on)
		}
	}

	b.add("README.txt", []byte(fmt.Sprintf(
		"kubectl etcd report of EtcdCluster %s/%s, taken %s.\n"+
			"No Secret's data was read (secrets.txt: existence, from metadata only). Credential-like values in specs,\n"+
			"status text, events and logs read %s; redaction goes by names and shapes, so look the bundle over before sharing it.\n"+
			"errors.txt lists what could not be gathered.\n", c.Namespace, c.Name, now.UTC().Format(time.RFC3339), Redacted)))
	b.add("errors.txt", []byte(strings.Join(b.errors, "\n")+"\n"))

	path := o.Path
	if path == "" {
		path = fmt.Sprintf("etcd-report-%s-%s-%s.tar.gz", c.Namespace, c.Name, now.UTC().Format("20060102-150405"))
	}
	if err := writeBundle(path, b.files); err != nil {
		return nil, err
	}
	res := &ReportResult{Path: path, Errors: b.errors}
	for f := range b.files {
		res.Files = append(res.Files, f)
	}
	sort.Strings(res.Files)
	return res, nil
}

// restoresOf are the restores into the cluster and those from its backups.
func restoresOf(c *etcdv1beta2.EtcdCluster, backups []etcdv1beta2.EtcdBackup, all []etcdv1beta2.EtcdRestore) []etcdv1beta2.EtcdRestore {
	ours := map[string]bool{}
	for _, eb := range backups {
		ours[eb.Name] = true
	}
	var out []etcdv1beta2.EtcdRestore
	for _, r := range all {
		if r.Namespace == c.Namespace && (r.Spec.EtcdCluster.Name == c.Name || ours[r.Annotations[etcdv1beta2.RestoreBackupRefAnnotation]]) {
			out = append(out, r)
		}
	}
	return out
}

// addOwned adds the cluster's Services, PVCs and PodDisruptionBudget-free view of what
// the operator made besides pods: Services and claims carrying the cluster's label.
func (p *Plugin) addOwned(ctx context.Context, b *bundle, c *etcdv1beta2.EtcdCluster) {
	sel := client.MatchingLabels{"etcd_cluster": c.Name}
	var svcs corev1.ServiceList
	if err := p.C.List(ctx, &svcs, client.InNamespace(c.Namespace), sel); err != nil {
		b.fail("services: %v", err)
	} else {
		for i := range svcs.Items {
			redactMeta(&svcs.Items[i].ObjectMeta)
		}
		b.addYAML("services.yaml", svcs.Items)
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := p.C.List(ctx, &pvcs, client.InNamespace(c.Namespace), sel); err != nil {
		b.fail("persistentvolumeclaims: %v", err)
	} else {
		for i := range pvcs.Items {
			redactMeta(&pvcs.Items[i].ObjectMeta)
		}
		b.addYAML("persistentvolumeclaims.yaml", pvcs.Items)
	}
}

// addSecretRefs records which Secrets the objects name and whether each exists, from
// the Secret's metadata alone: the API server sends no data for a metadata request.
func (p *Plugin) addSecretRefs(ctx context.Context, b *bundle, c *etcdv1beta2.EtcdCluster, backups []etcdv1beta2.EtcdBackup, restores []etcdv1beta2.EtcdRestore) {
	refs := map[string][]string{}
	ref := func(secret, by string) {
		if secret != "" {
			refs[secret] = append(refs[secret], by)
		}
	}
	if t := c.Spec.TLS; t != nil && t.Static != nil {
		ref(t.Static.OperatorSecret, "etcdcluster tls.static.operatorSecret")
		if m := t.Static.Member; m != nil {
			ref(m.PeerSecret, "etcdcluster tls.static.member.peerSecret")
			ref(m.ServerSecret, "etcdcluster tls.static.member.serverSecret")
		}
	}
	if on, secret := etcdv1beta2.AuthOf(c); on {
		ref(secret, "etcdcluster auth root password")
	}
	for _, eb := range backups {
		if eb.Spec.S3 != nil {
			ref(eb.Spec.S3.AWSSecret, "etcdbackup/"+eb.Name+" s3.awsSecret")
			ref(eb.Spec.S3.EncryptionKeySecret, "etcdbackup/"+eb.Name+" s3.encryptionKeySecret")
		}
		ref(eb.Spec.ClientTLSSecret, "etcdbackup/"+eb.Name+" clientTLSSecret")
	}
	for _, er := range restores {
		if er.Spec.S3 != nil {
			ref(er.Spec.S3.AWSSecret, "etcdrestore/"+er.Name+" s3.awsSecret")
			ref(er.Spec.S3.EncryptionKeySecret, "etcdrestore/"+er.Name+" s3.encryptionKeySecret")
		}
	}
	var lines []string
	for name, by := range refs {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
		state := "exists"
		if err := p.C.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, m); err != nil {
			state = "not readable: " + err.Error()
		}
		lines = append(lines, fmt.Sprintf("%s\t%s\t(named by %s)", name, state, strings.Join(by, ", ")))
	}
	sort.Strings(lines)
	b.add("secrets.txt", []byte("Secrets the objects name (names only; no Secret data is read):\n"+strings.Join(lines, "\n")+"\n"))
}

// addEvents keeps the namespace's events about the cluster and what belongs to it:
// its backups, restores, member pods, and the pods and claims named after them (backup,
// verification, check pods).
func (p *Plugin) addEvents(ctx context.Context, b *bundle, c *etcdv1beta2.EtcdCluster, pods []corev1.Pod, backups []etcdv1beta2.EtcdBackup, restores []etcdv1beta2.EtcdRestore) {
	var evs corev1.EventList
	if err := p.C.List(ctx, &evs, client.InNamespace(c.Namespace)); err != nil {
		b.fail("events: %v", err)
		return
	}
	prefixes := []string{c.Name}
	for _, eb := range backups {
		prefixes = append(prefixes, eb.Name)
	}
	for _, er := range restores {
		prefixes = append(prefixes, er.Name)
	}
	for _, pod := range pods {
		prefixes = append(prefixes, pod.Name)
	}
	var keep []corev1.Event
	for _, ev := range evs.Items {
		for _, pre := range prefixes {
			if n := ev.InvolvedObject.Name; n == pre || strings.HasPrefix(n, pre+"-") {
				ev.ManagedFields = nil
				ev.Message = redactText(ev.Message)
				keep = append(keep, ev)
				break
			}
		}
	}
	sort.SliceStable(keep, func(i, j int) bool { return eventTime(&keep[i]).Before(eventTime(&keep[j])) })
	b.addYAML("events.yaml", keep)
	var text bytes.Buffer
	t := newTable(&text, "TIME", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE")
	for _, ev := range keep {
		t.row(eventTime(&ev).UTC().Format(time.RFC3339), ev.Type, ev.Reason, strings.ToLower(ev.InvolvedObject.Kind)+"/"+ev.InvolvedObject.Name,
			fmt.Sprint(ev.Count), ev.Message)
	}
	_ = t.flush()
	b.add("events.txt", text.Bytes())
}

func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// addLogs adds the logs of every container of pod (and of the previous run of a
// restarted one), the last lines only, redacted.
func (p *Plugin) addLogs(ctx context.Context, b *bundle, dir string, pod *corev1.Pod, lines int64) {
	restarts := map[string]int32{}
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		restarts[cs.Name] = cs.RestartCount
	}
	var containers []string
	for _, c := range pod.Spec.InitContainers {
		containers = append(containers, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		containers = append(containers, c.Name)
	}
	limit := int64(maxLogBytes)
	for _, name := range containers {
		for _, previous := range []bool{false, true} {
			if previous && restarts[name] == 0 {
				continue
			}
			opts := &corev1.PodLogOptions{Container: name, TailLines: &lines, LimitBytes: &limit, Previous: previous, Timestamps: true}
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			out, err := p.Logs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, opts).DoRaw(lctx)
			cancel()
			file := dir + pod.Name + "." + name
			if previous {
				file += ".previous"
			}
			if err != nil {
				b.fail("logs of %s/%s container %s (previous=%t): %v", pod.Namespace, pod.Name, name, previous, err)
				continue
			}
			b.add(file+".log", []byte(redactText(string(out))))
		}
	}
}

// addOperator adds the operator's pods (scrubbed) and their logs.
func (p *Plugin) addOperator(ctx context.Context, b *bundle, o ReportOptions) {
	seen := map[string]bool{}
	var found []corev1.Pod
	for _, sel := range operatorSelectors {
		var list corev1.PodList
		opts := []client.ListOption{client.MatchingLabels(sel)}
		if o.OperatorNamespace != "" {
			opts = append(opts, client.InNamespace(o.OperatorNamespace))
		}
		if err := p.C.List(ctx, &list, opts...); err != nil {
			b.fail("operator pods (%s): %v", labels.SelectorFromSet(sel), err)
			continue
		}
		for _, pod := range list.Items {
			if k := pod.Namespace + "/" + pod.Name; !seen[k] {
				seen[k] = true
				found = append(found, pod)
			}
		}
	}
	if len(found) == 0 {
		b.fail("no operator pod found (labels control-plane=etcd-operator or app.kubernetes.io/name=etcd-operator%s); its logs are not in this bundle", map[bool]string{true: " in namespace " + o.OperatorNamespace, false: ""}[o.OperatorNamespace != ""])
		return
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Namespace+found[i].Name < found[j].Namespace+found[j].Name })
	for i := range found {
		p.addLogs(ctx, b, "logs/operator/"+found[i].Namespace+".", &found[i], defaultLogLines)
		redactPod(&found[i])
	}
	b.addYAML("operator-pods.yaml", found)
}

// addEtcdctl adds etcdctl's endpoint status and alarm list of one member, run in its
// pod. With etcd authentication on, etcd answers these only to a user, and root's
// password is never read nor sent through pods/exec: the bundle says so instead.
func (p *Plugin) addEtcdctl(ctx context.Context, b *bundle, pod *corev1.Pod, auth bool) {
	base := "etcdctl/" + pod.Name
	if pod.Status.Phase != corev1.PodRunning {
		b.add(base+".txt", []byte(fmt.Sprintf("pod phase %s: etcdctl not run\n", pod.Status.Phase)))
		return
	}
	if auth {
		b.add(base+".txt", []byte("etcd authentication is on: etcdctl needs root's password, which kubectl etcd never reads nor passes through pods/exec; see status.yaml for the operator's view of this member\n"))
		return
	}
	for _, cmd := range [][]string{{"endpoint", "status", "-w", "json"}, {"alarm", "list"}} {
		file := base + "." + strings.Join(cmd[:2], "-")
		out, err := p.etcdctl(ctx, pod, 10*time.Second, cmd...)
		if err != nil {
			b.fail("etcdctl %s in %s: %v", strings.Join(cmd, " "), pod.Name, err)
			b.add(file+".error.txt", []byte(redactText(err.Error())+"\n"))
			continue
		}
		ext := ".txt"
		if cmd[len(cmd)-1] == "json" {
			ext = ".json"
		}
		b.add(file+ext, []byte(redactText(string(out))))
	}
}

// writeBundle writes files as a gzipped tarball (path ending .tar.gz or .tgz) or into
// a new directory, readable by the caller only: a bundle describes the cluster in
// detail.
func writeBundle(path string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz") {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if err := writeTarGz(f, strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".tgz"), ".tar.gz"), names, files); err != nil {
			f.Close()
			os.Remove(path)
			return fmt.Errorf("report %s: %w", path, err)
		}
		return f.Close()
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		return fmt.Errorf("report: %w (give a new directory, or a path ending .tar.gz)", err)
	}
	for _, n := range names {
		full := filepath.Join(path, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[n], 0o600); err != nil {
			return err
		}
	}
	return nil
}

func writeTarGz(w io.Writer, top string, names []string, files map[string][]byte) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now()
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: top + "/" + n, Mode: 0o600, Size: int64(len(files[n])), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// PrintReport says where the bundle went.
func PrintReport(w io.Writer, format string, r *ReportResult) error {
	if done, err := printStructured(w, format, r); done {
		return err
	}
	fmt.Fprintf(w, "support bundle %s: %d files\n", r.Path, len(r.Files))
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  not gathered: %s\n", e)
	}
	return nil
}
