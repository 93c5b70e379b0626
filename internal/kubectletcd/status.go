package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// ClusterStatus is what `status` shows: one screen on a cluster.
type ClusterStatus struct {
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace"`
	Phase         string   `json:"phase"`
	Size          int      `json:"size"`
	DesiredSize   int      `json:"desiredSize"`
	Version       string   `json:"version"`
	TargetVersion string   `json:"targetVersion,omitempty"`
	ClusterID     string   `json:"clusterID,omitempty"`
	Leader        string   `json:"leader,omitempty"`
	Paused        bool     `json:"paused,omitempty"`
	TLS           bool     `json:"tls,omitempty"`
	Auth          bool     `json:"auth,omitempty"`
	Members       []Member `json:"members"`
	// IgnoredPods carry the member labels but are not controlled by the cluster.
	IgnoredPods    []string        `json:"ignoredPods,omitempty"`
	Alarms         []Alarm         `json:"alarms"`
	Backups        []BackupSummary `json:"backups"`
	BackupsError   string          `json:"backupsError,omitempty"`
	Conditions     []Condition     `json:"conditions"`
	LastDefragment *time.Time      `json:"lastDefragmentation,omitempty"`
}

// Member is one member as the operator last observed it, with its pod.
type Member struct {
	Name      string `json:"name"`
	ID        string `json:"id,omitempty"`
	Role      string `json:"role,omitempty"`
	Version   string `json:"version,omitempty"`
	DBSize    string `json:"dbSize,omitempty"`
	DBInUse   string `json:"dbSizeInUse,omitempty"`
	Healthy   bool   `json:"healthy"`
	Pod       string `json:"pod,omitempty"`
	PodPhase  string `json:"podPhase,omitempty"`
	PodReady  bool   `json:"podReady"`
	Node      string `json:"node,omitempty"`
	PodIP     string `json:"podIP,omitempty"`
	Restarts  int32  `json:"restarts"`
	InEtcd    bool   `json:"inEtcd"`
	HasPodObj bool   `json:"-"`
}

// Alarm is an etcd alarm the operator reports through a condition.
type Alarm struct {
	Alarm   string `json:"alarm"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// BackupSummary is an EtcdBackup of the cluster: its last backup and verification.
type BackupSummary struct {
	Name              string     `json:"name"`
	Storage           string     `json:"storage"`
	Schedule          string     `json:"schedule,omitempty"`
	Succeeded         bool       `json:"succeeded"`
	Reason            string     `json:"reason,omitempty"`
	LastSuccess       *time.Time `json:"lastSuccess,omitempty"`
	Revision          int64      `json:"revision,omitempty"`
	NextSchedule      *time.Time `json:"nextSchedule,omitempty"`
	Verified          string     `json:"verified,omitempty"`
	VerifiedReason    string     `json:"verifiedReason,omitempty"`
	LastVerified      *time.Time `json:"lastVerified,omitempty"`
	LastVerifiedKey   string     `json:"lastVerifiedKey,omitempty"`
	LastVerifiedRev   int64      `json:"lastVerifiedRevision,omitempty"`
	NewestStoredKey   string     `json:"newestStoredKey,omitempty"`
	NewestStoredCount int        `json:"storedListed,omitempty"`
}

// Condition is one of the cluster's conditions.
type Condition struct {
	Type    string     `json:"type"`
	Status  string     `json:"status"`
	Reason  string     `json:"reason,omitempty"`
	Message string     `json:"message,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
}

// getCluster reads the EtcdCluster, saying clearly when there is none.
func (p *Plugin) getCluster(ctx context.Context, name string) (*etcdv1beta2.EtcdCluster, error) {
	var c etcdv1beta2.EtcdCluster
	if err := p.C.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no EtcdCluster %q in namespace %q", name, p.Namespace)
		}
		return nil, fmt.Errorf("get EtcdCluster %s/%s: %w", p.Namespace, name, err)
	}
	return &c, nil
}

// memberSelector selects the cluster's member pods: status.selector as the operator
// wrote it, else the chart's labels.
func memberSelector(c *etcdv1beta2.EtcdCluster) labels.Selector {
	if c.Status.Selector != "" {
		if s, err := labels.Parse(c.Status.Selector); err == nil {
			return s
		}
	}
	return labels.SelectorFromSet(labels.Set{"app": "etcd", "etcd_cluster": c.Name})
}

// memberPods lists the cluster's member pods by name: the pods the selector finds that
// the EtcdCluster controls (the operator makes itself the controller of every member
// pod it creates, and CoreOS etcd-operator did the same for the pods the operator
// adopts). A pod that merely carries the labels, which anyone who may create pods in
// the namespace can give one, is returned in ignored by name and is never exec'd into,
// logged or counted as a member.
func (p *Plugin) memberPods(ctx context.Context, c *etcdv1beta2.EtcdCluster) (own []corev1.Pod, ignored []string, err error) {
	var pods corev1.PodList
	if err := p.C.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabelsSelector{Selector: memberSelector(c)}); err != nil {
		return nil, nil, fmt.Errorf("list member pods: %w", err)
	}
	for i := range pods.Items {
		if metav1.IsControlledBy(&pods.Items[i], c) {
			own = append(own, pods.Items[i])
		} else {
			ignored = append(ignored, pods.Items[i].Name)
		}
	}
	sort.Slice(own, func(i, j int) bool { return own[i].Name < own[j].Name })
	sort.Strings(ignored)
	return own, ignored, nil
}

// backupsOf are the EtcdBackups of the namespace that back up the cluster: by
// clusterRef, or by endpoints that name it (<cluster>-client... or
// <member>.<cluster>.<namespace>.svc...), as the operator resolves them.
func backupsOf(c *etcdv1beta2.EtcdCluster, all []etcdv1beta2.EtcdBackup) []etcdv1beta2.EtcdBackup {
	var out []etcdv1beta2.EtcdBackup
	for _, eb := range all {
		if backsUp(c, &eb) {
			out = append(out, eb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func backsUp(c *etcdv1beta2.EtcdCluster, eb *etcdv1beta2.EtcdBackup) bool {
	if eb.Namespace != c.Namespace {
		return false
	}
	if r := eb.Spec.ClusterRef; r != nil {
		return r.Name == c.Name
	}
	for _, ep := range eb.Spec.EtcdEndpoints {
		host := ep
		if u, err := url.Parse(ep); err == nil && u.Host != "" {
			host = u.Hostname()
		}
		parts := strings.Split(host, ".")
		if parts[0] == c.Name+"-client" && (len(parts) == 1 || parts[1] == c.Namespace) {
			return true
		}
		if len(parts) >= 4 && parts[1] == c.Name && parts[2] == c.Namespace && parts[3] == "svc" {
			return true
		}
	}
	return false
}

// clusterBackups lists the namespace's EtcdBackups and keeps the cluster's.
func (p *Plugin) clusterBackups(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]etcdv1beta2.EtcdBackup, error) {
	var list etcdv1beta2.EtcdBackupList
	if err := p.C.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("list EtcdBackups: %w", err)
	}
	return backupsOf(c, list.Items), nil
}

// Status gathers the status screen of the cluster name.
func (p *Plugin) Status(ctx context.Context, name string) (*ClusterStatus, error) {
	c, err := p.getCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	pods, ignored, err := p.memberPods(ctx, c)
	if err != nil {
		return nil, err
	}
	// A user who may read the cluster but not its backups still gets the screen.
	backups, berr := p.clusterBackups(ctx, c)
	if berr != nil && !apierrors.IsForbidden(berr) {
		return nil, berr
	}
	st := summarize(c, pods, backups)
	st.IgnoredPods = ignored
	if berr != nil {
		st.BackupsError = berr.Error()
	}
	return st, nil
}

// summarize is the status screen of c: pure, so tests feed it objects. Status text
// (condition messages, backup reasons) is redacted: the screen goes into report bundles
// and an error may quote an endpoint with user-info or a command line.
func summarize(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod, backups []etcdv1beta2.EtcdBackup) *ClusterStatus {
	st := &ClusterStatus{
		Name: c.Name, Namespace: c.Namespace, Phase: string(c.Status.Phase), Size: c.Status.Size, DesiredSize: c.Spec.Size,
		Version: c.Status.CurrentVersion, TargetVersion: c.Status.TargetVersion, ClusterID: c.Status.ClusterID,
		Leader: c.Status.Members.Leader, Paused: c.Spec.Paused,
		TLS:     c.Spec.TLS != nil && (c.Spec.TLS.Static != nil || c.Spec.TLS.Auto != nil),
		Auth:    authOn(c),
		Members: mergeMembers(c, pods), Alarms: []Alarm{}, Backups: []BackupSummary{}, Conditions: []Condition{},
	}
	for i := range pods {
		if args, err := etcdctlBase(&pods[i]); err == nil && strings.Contains(args[1], "https://") {
			st.TLS = true
		}
	}
	if m := c.Status.Maintenance; m != nil && m.LastDefragmentationTime != nil {
		t := m.LastDefragmentationTime.Time
		st.LastDefragment = &t
	}
	for _, cond := range c.Status.Conditions {
		cd := Condition{Type: string(cond.Type), Status: string(cond.Status), Reason: cond.Reason, Message: redactText(cond.Message)}
		if t, err := time.Parse(time.RFC3339, cond.LastTransitionTime); err == nil {
			cd.Since = &t
		}
		st.Conditions = append(st.Conditions, cd)
		// etcd's alarms, as the operator reports them.
		if cond.Status == corev1.ConditionFalse {
			switch cond.Type {
			case etcdv1beta2.ClusterConditionSpaceAvailable:
				st.Alarms = append(st.Alarms, Alarm{Alarm: "NOSPACE", Reason: cond.Reason, Message: cd.Message})
			case etcdv1beta2.ClusterConditionDataConsistent:
				st.Alarms = append(st.Alarms, Alarm{Alarm: "CORRUPT", Reason: cond.Reason, Message: cd.Message})
			}
		}
	}
	for _, eb := range backups {
		st.Backups = append(st.Backups, summarizeBackup(&eb))
	}
	return st
}

func authOn(c *etcdv1beta2.EtcdCluster) bool {
	on, _ := etcdv1beta2.AuthOf(c)
	return on
}

// mergeMembers joins status.members.details (etcd's view) with the member pods
// (Kubernetes' view): a member without a pod and a pod without a member both show.
func mergeMembers(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) []Member {
	byName := map[string]*Member{}
	var order []string
	for _, d := range c.Status.Members.Details {
		m := &Member{Name: d.Name, ID: d.ID, Role: string(d.Role), Version: d.Version, DBSize: quantity(d.DBSize),
			DBInUse: quantity(d.DBSizeInUse), Healthy: d.Healthy, InEtcd: true}
		byName[d.Name] = m
		order = append(order, d.Name)
	}
	for _, pod := range pods {
		m, ok := byName[pod.Name]
		if !ok {
			m = &Member{Name: pod.Name}
			byName[pod.Name] = m
			order = append(order, pod.Name)
		}
		m.Pod, m.PodPhase, m.Node, m.PodIP, m.HasPodObj = pod.Name, string(pod.Status.Phase), pod.Spec.NodeName, pod.Status.PodIP, true
		if pod.DeletionTimestamp != nil {
			m.PodPhase = "Terminating"
		}
		for _, cs := range pod.Status.Conditions {
			if cs.Type == corev1.PodReady {
				m.PodReady = cs.Status == corev1.ConditionTrue
			}
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == etcdContainer {
				m.Restarts = cs.RestartCount
			}
		}
	}
	sort.Strings(order)
	out := make([]Member, 0, len(order))
	for _, n := range slices.Compact(order) {
		out = append(out, *byName[n])
	}
	return out
}

func summarizeBackup(eb *etcdv1beta2.EtcdBackup) BackupSummary {
	s := BackupSummary{Name: eb.Name, Storage: storageOf(eb), Succeeded: eb.Status.Succeeded, Reason: redactText(eb.Status.Reason),
		Revision: eb.Status.EtcdRevision, LastVerifiedKey: eb.Status.LastVerifiedKey, LastVerifiedRev: eb.Status.LastVerifiedRevision}
	switch {
	case eb.Annotations[etcdv1beta2.BackupScheduleAnnotation] != "":
		s.Schedule = eb.Annotations[etcdv1beta2.BackupScheduleAnnotation]
	case eb.Spec.BackupPolicy != nil && eb.Spec.BackupPolicy.BackupIntervalInSecond > 0:
		s.Schedule = "every " + (time.Duration(eb.Spec.BackupPolicy.BackupIntervalInSecond) * time.Second).String()
	default:
		s.Schedule = "one-shot"
	}
	if t := eb.Status.LastSuccessDate; !t.IsZero() {
		tt := t.Time
		s.LastSuccess = &tt
	}
	if t := eb.Status.NextScheduleTime; t != nil {
		tt := t.Time
		s.NextSchedule = &tt
	}
	if t := eb.Status.LastVerifiedTime; t != nil {
		tt := t.Time
		s.LastVerified = &tt
	}
	if c := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded); c != nil && c.Reason != "" && !eb.Status.Succeeded {
		s.Reason = c.Reason + ": " + redactText(c.Message)
	}
	if c := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionVerified); c != nil {
		s.Verified, s.VerifiedReason = string(c.Status), c.Reason
	}
	if len(eb.Status.Backups) > 0 {
		s.NewestStoredKey, s.NewestStoredCount = eb.Status.Backups[0].Key, len(eb.Status.Backups)
	}
	return s
}

// storageOf names where a backup goes, without credentials: s3://bucket/key or
// pvc:claim/path.
func storageOf(eb *etcdv1beta2.EtcdBackup) string {
	switch {
	case eb.Spec.S3 != nil:
		return "s3://" + eb.Spec.S3.Path
	case eb.Spec.PVC != nil:
		return "pvc:" + eb.Spec.PVC.ClaimName + "/" + eb.Spec.PVC.Path
	}
	return string(eb.Spec.StorageType)
}

// PrintStatus writes st as a table screen or as JSON/YAML.
func PrintStatus(w io.Writer, format string, st *ClusterStatus, now time.Time) error {
	if done, err := printStructured(w, format, st); done {
		return err
	}
	version := st.Version
	if st.TargetVersion != "" && st.TargetVersion != st.Version {
		version += " -> " + st.TargetVersion
	}
	var flags []string
	if st.Paused {
		flags = append(flags, "PAUSED")
	}
	if st.TLS {
		flags = append(flags, "TLS")
	}
	if st.Auth {
		flags = append(flags, "auth")
	}
	fmt.Fprintf(w, "Cluster:   %s/%s   phase %s   members %d/%d   version %s   leader %s\n",
		st.Namespace, st.Name, orDash(st.Phase), st.Size, st.DesiredSize, orDash(version), orDash(st.Leader))
	fmt.Fprintf(w, "ClusterID: %s", orDash(st.ClusterID))
	if len(flags) > 0 {
		fmt.Fprintf(w, "   %s", strings.Join(flags, ", "))
	}
	if st.LastDefragment != nil {
		fmt.Fprintf(w, "   last defragmentation %s ago", age(now, *st.LastDefragment))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "\nMembers:")
	if err := printMembers(w, st.Members); err != nil {
		return err
	}
	if len(st.IgnoredPods) > 0 {
		fmt.Fprintf(w, "  ignored (member labels, but not controlled by this EtcdCluster): %s\n", strings.Join(st.IgnoredPods, ", "))
	}

	fmt.Fprint(w, "\nAlarms:    ")
	if len(st.Alarms) == 0 {
		fmt.Fprintln(w, "none")
	} else {
		var as []string
		for _, a := range st.Alarms {
			as = append(as, fmt.Sprintf("%s (%s: %s)", a.Alarm, a.Reason, truncate(a.Message, 100)))
		}
		fmt.Fprintln(w, strings.Join(as, "; "))
	}

	fmt.Fprintln(w, "\nBackups:")
	if st.BackupsError != "" {
		fmt.Fprintf(w, "  not readable: %s\n", st.BackupsError)
	} else if len(st.Backups) == 0 {
		fmt.Fprintln(w, "  none name this cluster (kubectl etcd backup NAME --one-shot ... takes one)")
	} else {
		t := newTable(w, "  NAME", "STORAGE", "SCHEDULE", "LAST SUCCESS", "REVISION", "LAST VERIFIED", "VERIFIED", "PROBLEM")
		for _, b := range st.Backups {
			last, verified := "never", "never"
			if b.LastSuccess != nil {
				last = age(now, *b.LastSuccess) + " ago"
			}
			if b.LastVerified != nil {
				verified = age(now, *b.LastVerified) + " ago"
			}
			ver := b.Verified
			if b.VerifiedReason != "" {
				ver += " (" + b.VerifiedReason + ")"
			}
			problem := ""
			if !b.Succeeded {
				problem = truncate(b.Reason, 60)
			}
			rev := ""
			if b.Revision > 0 {
				rev = fmt.Sprint(b.Revision)
			}
			t.row("  "+b.Name, b.Storage, b.Schedule, last, rev, verified, ver, problem)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\nConditions:")
	t := newTable(w, "  TYPE", "STATUS", "REASON", "SINCE", "MESSAGE")
	for _, c := range st.Conditions {
		since := ""
		if c.Since != nil {
			since = age(now, *c.Since)
		}
		t.row("  "+c.Type, c.Status, c.Reason, since, truncate(c.Message, 80))
	}
	return t.flush()
}

func printMembers(w io.Writer, ms []Member) error {
	t := newTable(w, "  NAME", "ID", "ROLE", "VERSION", "DB SIZE", "IN USE", "HEALTHY", "POD", "READY", "RESTARTS", "NODE")
	for _, m := range ms {
		healthy := "no"
		if m.Healthy {
			healthy = "yes"
		}
		if !m.InEtcd {
			healthy = "not a member"
		}
		pod, ready := m.PodPhase, "no"
		if !m.HasPodObj {
			pod = "no pod"
		}
		if m.PodReady {
			ready = "yes"
		}
		t.row("  "+m.Name, m.ID, m.Role, m.Version, m.DBSize, m.DBInUse, healthy, pod, ready, fmt.Sprint(m.Restarts), m.Node)
	}
	return t.flush()
}

// PrintMembers writes the member list as a table or as JSON/YAML.
func PrintMembers(w io.Writer, format string, ms []Member) error {
	if done, err := printStructured(w, format, ms); done {
		return err
	}
	return printMembers(w, ms)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
