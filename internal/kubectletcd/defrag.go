package kubectletcd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// DefragOptions are `defrag`'s flags.
type DefragOptions struct {
	// Force defragments although the cluster is not Available with every member
	// healthy, or a maintenance run of the operator's is in progress.
	Force bool
	// Timeout bounds each member's defragmentation.
	Timeout time.Duration
}

// DefragResult is one member's defragmentation.
type DefragResult struct {
	Member       string `json:"member"`
	Role         string `json:"role,omitempty"`
	DBSizeBefore int64  `json:"dbSizeBefore,omitempty"`
	DBSizeAfter  int64  `json:"dbSizeAfter,omitempty"`
	InUseAfter   int64  `json:"dbSizeInUseAfter,omitempty"`
	Error        string `json:"error,omitempty"`
}

// endpointStatus is one entry of `etcdctl endpoint status -w json`.
type endpointStatus struct {
	Endpoint string `json:"Endpoint"`
	Status   struct {
		Version     string `json:"version"`
		DBSize      int64  `json:"dbSize"`
		DBSizeInUse int64  `json:"dbSizeInUse"`
		Leader      uint64 `json:"leader"`
		RaftIndex   uint64 `json:"raftIndex"`
		RaftTerm    uint64 `json:"raftTerm"`
		IsLearner   bool   `json:"isLearner"`
		Errors      []string
	} `json:"Status"`
}

func parseEndpointStatus(out []byte) (*endpointStatus, error) {
	var list []endpointStatus
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("etcdctl endpoint status: unreadable answer %q: %v", truncate(string(out), 200), err)
	}
	if len(list) != 1 {
		return nil, fmt.Errorf("etcdctl endpoint status: %d answers, want 1", len(list))
	}
	return &list[0], nil
}

// etcdctl runs etcdctl with args in the member pod's etcd container.
func (p *Plugin) etcdctl(ctx context.Context, pod *corev1.Pod, timeout time.Duration, args ...string) ([]byte, error) {
	base, err := etcdctlArgs(pod, timeout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	out, errOut, err := p.Exec.Exec(ctx, pod.Namespace, pod.Name, etcdContainer, append(base, args...))
	if err != nil {
		if msg := strings.TrimSpace(string(errOut)); msg != "" {
			return out, fmt.Errorf("%w: %s", err, truncate(msg, 500))
		}
		return out, err
	}
	return out, nil
}

// defragOrder is the members to defragment, followers (and learners) first and the
// leader last, as the operator's own runs do: the leader's defragmentation stalls the
// cluster's writes, a follower's only that follower. Members without a running pod
// are left out (and named in skipped).
func defragOrder(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) (order []*corev1.Pod, skipped []string) {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodRunning && pods[i].DeletionTimestamp == nil {
			byName[pods[i].Name] = &pods[i]
		}
	}
	var leader *corev1.Pod
	for _, d := range c.Status.Members.Details {
		pod, ok := byName[d.Name]
		switch {
		case !ok:
			skipped = append(skipped, d.Name)
		case d.Role == etcdv1beta2.MemberRoleLeader || d.Name == c.Status.Members.Leader:
			leader = pod
		default:
			order = append(order, pod)
		}
	}
	if leader != nil {
		order = append(order, leader)
	}
	return order, skipped
}

// defragRefusal says why defragmenting c now is refused without --force; "" when it
// is not.
func defragRefusal(c *etcdv1beta2.EtcdCluster) string {
	if on, secret := etcdv1beta2.AuthOf(c); on {
		// Not overridable: the password would have to travel as a pods/exec argument,
		// which the API server writes into its request and audit logs.
		return fmt.Sprintf("cluster %s has etcd authentication on: defragmentation needs root's password (Secret %s), which this plugin never reads nor passes through pods/exec; schedule it instead (spec.maintenance) or run etcdctl --user root defrag in a member yourself", c.Name, secret)
	}
	return ""
}

func defragUnsafe(c *etcdv1beta2.EtcdCluster) string {
	if m := c.Status.Maintenance; m != nil && m.Run != nil {
		return fmt.Sprintf("the operator's %s maintenance run started %s is in progress", m.Run.Trigger, m.Run.StartedAt.UTC().Format(time.RFC3339))
	}
	available := false
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionAvailable && cond.Status == corev1.ConditionTrue {
			available = true
		}
	}
	if !available {
		return "the cluster is not Available"
	}
	for _, d := range c.Status.Members.Details {
		if !d.Healthy {
			return fmt.Sprintf("member %s is not healthy", d.Name)
		}
	}
	return ""
}

// Defrag defragments every member of the cluster name, one at a time, followers
// first and the leader last, with etcdctl in each member pod (the operator has no
// on-demand trigger, only schedules and thresholds in spec.maintenance).
func (p *Plugin) Defrag(ctx context.Context, name string, o DefragOptions) ([]DefragResult, error) {
	c, err := p.getCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	if why := defragRefusal(c); why != "" {
		return nil, fmt.Errorf("%s", why)
	}
	if why := defragUnsafe(c); why != "" && !o.Force {
		return nil, fmt.Errorf("not defragmenting %s: %s (--force to defragment anyway)", name, why)
	}
	pods, _, err := p.memberPods(ctx, c)
	if err != nil {
		return nil, err
	}
	order, skipped := defragOrder(c, pods)
	if len(order) == 0 {
		return nil, fmt.Errorf("cluster %s has no member with a running pod", name)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	role := map[string]string{}
	for _, d := range c.Status.Members.Details {
		role[d.Name] = string(d.Role)
	}
	var results []DefragResult
	var failed []string
	for _, pod := range order {
		r := DefragResult{Member: pod.Name, Role: role[pod.Name]}
		if out, err := p.etcdctl(ctx, pod, 10*time.Second, "endpoint", "status", "-w", "json"); err == nil {
			if st, err := parseEndpointStatus(out); err == nil {
				r.DBSizeBefore = st.Status.DBSize
			}
		}
		if _, err := p.etcdctl(ctx, pod, timeout, "defrag"); err != nil {
			r.Error = err.Error()
			failed = append(failed, pod.Name)
			results = append(results, r)
			// One failure stops the run: the next member may fail the same way, and a
			// leader defragmented after failed followers gains nothing.
			break
		}
		if out, err := p.etcdctl(ctx, pod, 10*time.Second, "endpoint", "status", "-w", "json"); err == nil {
			if st, err := parseEndpointStatus(out); err == nil {
				r.DBSizeAfter, r.InUseAfter = st.Status.DBSize, st.Status.DBSizeInUse
			}
		}
		results = append(results, r)
	}
	for _, s := range skipped {
		results = append(results, DefragResult{Member: s, Role: role[s], Error: "skipped: no running pod"})
	}
	if len(failed) > 0 {
		return results, fmt.Errorf("defragmentation of %s failed; later members were not defragmented", strings.Join(failed, ", "))
	}
	return results, nil
}

// PrintDefrag writes the defragmentation results.
func PrintDefrag(w io.Writer, format string, rs []DefragResult) error {
	if done, err := printStructured(w, format, rs); done {
		return err
	}
	t := newTable(w, "MEMBER", "ROLE", "DB BEFORE", "DB AFTER", "IN USE", "RESULT")
	for _, r := range rs {
		res := "defragmented"
		if r.Error != "" {
			res = truncate(r.Error, 100)
		}
		t.row(r.Member, r.Role, bytesOrEmpty(r.DBSizeBefore), bytesOrEmpty(r.DBSizeAfter), bytesOrEmpty(r.InUseAfter), res)
	}
	return t.flush()
}

func bytesOrEmpty(n int64) string {
	if n <= 0 {
		return ""
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
