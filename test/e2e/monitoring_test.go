package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
	"github.com/etcd-operator/etcd-operator/internal/test/promtest"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// alertFor is the longest for the bench's Prometheus loads the shipped alerts with (they
// say 1m to 30m): the faults here show each alert fires and resolves; promtool's unit
// tests (test/monitoring/promtool) hold the shipped for durations.
const alertFor = 10 * time.Second

// TestAlertsOnRealPrometheus installs the operator as config/default does (a bench pod)
// with config/prometheus's metrics reader, and runs a real Prometheus scraping what the
// shipped PodMonitors select (a scrape configuration generated from them, promtest) with
// the shipped alert rules. Then, on one 3-member cluster: quorum loss fires
// EtcdClusterUnavailable (and EtcdClusterQuorumLost), NOSPACE fires EtcdClusterAlarm, a
// failing periodic backup fires EtcdBackupFailing, and each resolves once the fault is
// repaired; finally every panel query of the Grafana dashboard returns data (a second,
// built-in-TLS cluster gives the certificate panel its series).
func TestAlertsOnRealPrometheus(t *testing.T) {
	root := framework.RepoRoot(t)
	objs := kustomizeBuild(t, root, "config/default")
	monitoring := kustomizeBuild(t, root, "config/prometheus")
	s := schemeWithV1(t)
	b := bench.NewForTest(t, bench.Options{Scheme: s})
	c := b.Client()
	ctx := context.Background()

	// The operator, as `kustomize build config/default | kubectl apply -f -` installs it,
	// allowed (as an administrator would) to dial the test's MinIO on the bench's
	// control-plane address.
	var dep *appsv1.Deployment
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			t.Fatal("config/default's Deployment has no containers")
		}
		first := containers[0].(map[string]any)
		args, _ := first["args"].([]any)
		first["args"] = append(args, "--allow-s3-endpoint="+bench.ControlPlaneIP)
		if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			t.Fatal(err)
		}
		dep = &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
			t.Fatal(err)
		}
	}
	if dep == nil {
		t.Fatal("config/default has no operator Deployment")
	}
	// config/prometheus's RBAC and token Secret are applied; its PodMonitors and
	// PrometheusRule (whose CRDs the bench lacks) become Prometheus' own configuration.
	var monitors []promtest.PodMonitor
	var prometheusRule []byte
	for _, u := range monitoring {
		raw, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		switch u.GetKind() {
		case "PodMonitor":
			m, err := promtest.DecodePodMonitor(raw)
			if err != nil {
				t.Fatalf("PodMonitor %s: %v", u.GetName(), err)
			}
			monitors = append(monitors, m)
		case "PrometheusRule":
			prometheusRule = raw
		default:
			objs = append(objs, u)
		}
	}
	if len(monitors) != 2 || prometheusRule == nil {
		t.Fatalf("config/prometheus: %d PodMonitors and rules %v; want the operator's and the members' monitors and the rules", len(monitors), prometheusRule != nil)
	}
	applyInstall(ctx, t, c, objs)
	ns := dep.Namespace
	t.Cleanup(func() {
		if t.Failed() {
			logOperatorPods(t, b, ns)
		}
	})
	secret := func(namespace, name, key string) (string, error) {
		var sec corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sec); err != nil {
			return "", err
		}
		if len(sec.Data[key]) == 0 {
			return "", fmt.Errorf("secret %s/%s has no %s yet", namespace, name, key)
		}
		return string(sec.Data[key]), nil
	}
	var scrapes []promtest.ScrapeConfig
	framework.Eventually(t, time.Minute, "scrape configs (the metrics reader's token filled in)", func() error {
		var err error
		scrapes, err = promtest.ScrapeConfigs(monitors, promtest.ScrapeOptions{KubeconfigFile: b.Kubeconfig(), ScrapeInterval: "2s", Secret: secret})
		return err
	})
	ruleFile, err := promtest.RuleFile(prometheusRule)
	if err != nil {
		t.Fatal(err)
	}
	if ruleFile, err = promtest.WithForAtMost(ruleFile, alertFor); err != nil {
		t.Fatal(err)
	}
	cfg, err := promtest.Config(scrapes, []string{"rules.yaml"}, "2s")
	if err != nil {
		t.Fatal(err)
	}
	prom := promtest.Start(t, bench.ControlPlaneIP, cfg, map[string][]byte{"rules.yaml": ruleFile})
	framework.Eventually(t, 3*time.Minute, "operator Deployment available", deploymentAvailable(ctx, c, dep))

	e := framework.Attach(t, b)
	const name = "mon"
	cl := newCluster(name, 3)
	cl.Annotations = map[string]string{etcdv1beta2.QuotaBackendBytesAnnotation: strconv.Itoa(16 << 20)}
	e.Create(cl)
	e.WaitAvailable(name, 3, 3*time.Minute)

	// Prometheus scrapes exactly what the PodMonitors select: the three member pods and
	// the operator pod, each up, labelled as the rules expect.
	e.Eventually(time.Minute, "targets: 3 members and the operator, all up", func() error {
		ts, err := prom.Targets(ctx)
		if err != nil {
			return err
		}
		var got []string
		for _, tg := range ts {
			l := tg.Labels
			got = append(got, fmt.Sprintf("%s %s/%s cluster=%s %s", l["job"], l["namespace"], l["pod"], l["cluster"], tg.Health))
		}
		sort.Strings(got)
		var want []string
		for p := range e.MemberPods(name) {
			want = append(want, fmt.Sprintf("etcd-operator-members default/%s cluster=%s up", p, name))
		}
		var ops corev1.PodList
		if err := c.List(ctx, &ops, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		for _, p := range ops.Items {
			want = append(want, fmt.Sprintf("etcd-operator %s/%s cluster= up", ns, p.Name))
		}
		sort.Strings(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			return fmt.Errorf("targets\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return nil
	})
	// Once the cluster is up and scraped, nothing fires (while it bootstrapped, the
	// alerts about an unavailable cluster and unscrapable members may have).
	e.Eventually(time.Minute, "no alert firing on the healthy cluster", func() error {
		if firing := alertsIn(t, prom, "firing"); len(firing) > 0 {
			return fmt.Errorf("firing: %v", firing)
		}
		return nil
	})

	// A one-member cluster with the operator's built-in TLS, for the dashboard's
	// certificate panel (only TLS clusters have certificate series); it starts while the
	// faults below run on the other.
	const tlsName = "mon-tls"
	tlsCluster := newCluster(tlsName, 1)
	tlsCluster.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}
	e.Create(tlsCluster)

	t.Run("quorum loss", func(t *testing.T) {
		pods := sortedKeys(e.MemberPods(name))
		stopped := pods[:2]
		for _, p := range stopped {
			if err := b.Faults().StopPod("default", p); err != nil {
				t.Fatal(err)
			}
		}
		resumed := false
		resume := func() {
			if resumed {
				return
			}
			resumed = true
			for _, p := range stopped {
				if err := b.Faults().ContinuePod("default", p); err != nil {
					t.Errorf("continue %s: %v", p, err)
				}
			}
		}
		t.Cleanup(resume)
		fault := time.Now()
		waitAlert(t, e, prom, "EtcdClusterUnavailable", map[string]string{"cluster": name}, fault)
		waitAlert(t, e, prom, "EtcdClusterQuorumLost", map[string]string{"cluster": name}, fault)
		resume()
		repaired := time.Now()
		e.WaitAvailable(name, 3, 3*time.Minute)
		waitResolved(t, e, prom, "EtcdClusterUnavailable", map[string]string{"cluster": name}, repaired)
		waitResolved(t, e, prom, "EtcdClusterQuorumLost", map[string]string{"cluster": name}, repaired)
	})

	t.Run("NOSPACE", func(t *testing.T) {
		// Distinct keys, so the data is live. The operator compacts, defragments and
		// disarms by itself while that frees 10% of the quota (the fill's overhead): then
		// the fill goes on, until the live data alone holds the alarm.
		cli := e.EtcdClient(name)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		val := strings.Repeat("x", 512<<10)
		var fault time.Time
		for i, held := 0, false; !held; i++ {
			if i == 200 {
				t.Fatal("200 puts of 512 KiB never filled a 16 MiB quota")
			}
			_, err := cli.Put(wctx, fmt.Sprintf("fill/%03d", i), val)
			if err == nil {
				continue
			}
			if !errors.Is(err, rpctypes.ErrNoSpace) {
				t.Fatalf("put %d: %v", i, err)
			}
			t.Logf("NOSPACE after %d puts of 512 KiB", i)
			fault = time.Now()
			e.Eventually(alertFor+2*time.Minute, "NOSPACE disarmed by the operator or EtcdClusterAlarm firing", func() error {
				as, err := prom.Alerts(wctx)
				if err != nil {
					return err
				}
				if a := matching(as, "EtcdClusterAlarm", map[string]string{"cluster": name, "alarm": "NOSPACE"}); a != nil && a.State == "firing" {
					held = true
					t.Logf("EtcdClusterAlarm firing %v after the last NOSPACE", time.Since(fault).Round(time.Second))
					return nil
				}
				al, err := cli.AlarmList(wctx)
				if err != nil {
					return err
				}
				if len(al.Alarms) == 0 {
					return nil
				}
				return fmt.Errorf("alarms %v, alert not firing", al.Alarms)
			})
		}
		if _, err := cli.Delete(wctx, "fill/", clientv3.WithPrefix()); err != nil {
			t.Fatalf("delete the filling keys under NOSPACE: %v", err)
		}
		repaired := time.Now()
		// The operator compacts, defragments and disarms by itself.
		e.Eventually(3*time.Minute, "NOSPACE disarmed by the operator", func() error { return noAlarms(wctx, cli) })
		waitResolved(t, e, prom, "EtcdClusterAlarm", map[string]string{"cluster": name, "alarm": "NOSPACE"}, repaired)
	})

	t.Run("failing backup", func(t *testing.T) {
		srv := miniotest.StartOn(t, bench.ControlPlaneIP)
		srv.MakeBucket(t, backupBucket)
		const bk, secretName = "mon-periodic", "mon-s3"
		e.Create(&etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: bk, Namespace: "default"},
			Spec: etcdv1beta2.EtcdBackupSpec{
				EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.default.svc:2379", name)},
				StorageType:   etcdv1beta2.BackupStorageTypeS3,
				BackupPolicy:  &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 2, MaxBackups: 2},
				// The Secret it names does not exist yet: every attempt fails.
				BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{
					Path: backupBucket + "/mon", AWSSecret: secretName, Endpoint: srv.Endpoint(), ForcePathStyle: true}},
			},
		})
		fault := time.Now()
		waitAlert(t, e, prom, "EtcdBackupFailing", map[string]string{"backup": bk}, fault)
		e.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: "default"}, Data: map[string][]byte{
			"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}})
		repaired := time.Now()
		waitResolved(t, e, prom, "EtcdBackupFailing", map[string]string{"backup": bk}, repaired)
	})

	t.Run("dashboard", func(t *testing.T) {
		e.Eventually(3*time.Minute, tlsName+" Available", func() error {
			if cl := e.Cluster(tlsName); !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionAvailable) {
				return fmt.Errorf("conditions %v", cl.Status.Conditions)
			}
			return nil
		})
		queries := dashboardQueries(t, filepath.Join(root, "config/grafana/etcd-operator-dashboard.json"))
		vars := strings.NewReplacer(`$namespace`, ".*", `$cluster`, ".*", "$__rate_interval", "1m", "$__interval", "2s", "$__range", "1h")
		// Panels that count failures only: empty while nothing failed (none of the faults
		// above makes a step of the operator fail). Each must return data once its
		// failure matcher is dropped, so its series and other labels are right.
		failuresOnly := map[string]string{"Failed steps by cluster": `, result="error"`}
		// Panels of a counter that has no series until the first time it counts: the
		// operator's retries of a request etcd refused or let time out. Since an
		// observation abandons the member list of a cluster without a leader and reads
		// the alarm list only when a member reports an alarm (observe_etcd.go,
		// observe_space.go), the faults above made no retry in CI, so it may stay empty;
		// its labels are TestMetrics' (internal/etcdadmin). It must still name the metric.
		untilCounted := map[string]string{"Request retries by cause": "etcd_operator_etcdadmin_retries_total"}
		// Rates need two samples in their window: poll, then report what stayed empty.
		var empty []string
		err := framework.Poll(time.Minute, func() error {
			empty = empty[:0]
			for _, q := range queries {
				expr := q.expr
				if m, ok := failuresOnly[q.title]; ok {
					if !strings.Contains(expr, m) {
						return fmt.Errorf("panel %q no longer filters on %s: %s", q.title, m, expr)
					}
					expr = strings.Replace(expr, m, "", 1)
				}
				res, err := prom.Query(ctx, vars.Replace(expr))
				if err != nil {
					return fmt.Errorf("panel %q: %v", q.title, err)
				}
				if metric, ok := untilCounted[q.title]; ok && !strings.Contains(expr, metric+"{") {
					return fmt.Errorf("panel %q no longer queries %s: %s", q.title, metric, expr)
				}
				if len(res) == 0 && untilCounted[q.title] == "" {
					empty = append(empty, fmt.Sprintf("%s: %s", q.title, q.expr))
				}
			}
			if len(empty) > 0 {
				return fmt.Errorf("%d of %d panel queries return no data", len(empty), len(queries))
			}
			return nil
		})
		if err != nil {
			t.Errorf("%v:\n%s", err, strings.Join(empty, "\n"))
		}
		t.Logf("%d panel queries answered", len(queries))
	})
}

// alertsIn lists the alerts in the given state as "name{labels}".
func alertsIn(t *testing.T, prom *promtest.Server, state string) []string {
	t.Helper()
	as, err := prom.Alerts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		if a.State == state {
			out = append(out, fmt.Sprintf("%s%v", a.Labels["alertname"], a.Labels))
		}
	}
	return out
}

// matching returns the alert named name whose labels include want, if any.
func matching(as []promtest.Alert, name string, want map[string]string) *promtest.Alert {
	for i, a := range as {
		if a.Labels["alertname"] != name {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && a.Labels[k] == v
		}
		if ok {
			return &as[i]
		}
	}
	return nil
}

// waitAlert waits for the alert to fire: within its (capped) for plus the time the
// operator or etcd take to report the fault and a few scrape and evaluation intervals.
func waitAlert(t *testing.T, e *framework.Env, prom *promtest.Server, name string, want map[string]string, fault time.Time) {
	t.Helper()
	e.Eventually(alertFor+2*time.Minute, name+" firing", func() error {
		as, err := prom.Alerts(context.Background())
		if err != nil {
			return err
		}
		a := matching(as, name, want)
		if a == nil {
			return fmt.Errorf("not pending or firing")
		}
		if a.State != "firing" {
			return fmt.Errorf("%s since %v", a.State, a.ActiveAt.Format(time.RFC3339))
		}
		t.Logf("%s firing %v after the fault (pending from %v after it)", name, time.Since(fault).Round(time.Second), a.ActiveAt.Sub(fault).Round(time.Second))
		return nil
	})
}

// waitResolved waits until the alert is neither pending nor firing.
func waitResolved(t *testing.T, e *framework.Env, prom *promtest.Server, name string, want map[string]string, repaired time.Time) {
	t.Helper()
	e.Eventually(3*time.Minute, name+" resolved", func() error {
		as, err := prom.Alerts(context.Background())
		if err != nil {
			return err
		}
		if a := matching(as, name, want); a != nil {
			return fmt.Errorf("%s %v", a.State, a.Labels)
		}
		t.Logf("%s resolved %v after the repair", name, time.Since(repaired).Round(time.Second))
		return nil
	})
}

type panelQuery struct{ title, expr string }

// dashboardQueries are the expressions of every panel of a Grafana dashboard.
func dashboardQueries(t *testing.T, path string) []panelQuery {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string          `json:"title"`
		Panels  json.RawMessage `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var out []panelQuery
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if tg.Expr != "" {
					out = append(out, panelQuery{p.Title, tg.Expr})
				}
			}
			if len(p.Panels) > 0 {
				var sub []panel
				if err := json.Unmarshal(p.Panels, &sub); err != nil {
					t.Fatal(err)
				}
				walk(sub)
			}
		}
	}
	walk(d.Panels)
	if len(out) == 0 {
		t.Fatalf("%s: no panel queries", path)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
