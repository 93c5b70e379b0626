// Package framework runs the operator against the local bench for end-to-end tests and
// benchmarks: one bench per test with the CRDs installed and the operator's manager
// running in-process (inside the bench network namespace, as an in-cluster pod would).
package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/go-logr/logr"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers"
	"github.com/etcd-operator/etcd-operator/internal/pinkey"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/test/bench"
)

// env is one bench with the CRDs installed and an operator that can be started and
// stopped (to test that a restarted operator resumes).
type Env struct {
	t      testing.TB
	Bench  *bench.Bench
	C      client.Client
	scheme *runtime.Scheme

	// AfterAction is the failpoint of the operators StartOperator starts from now on
	// (see etcdcluster.Reconciler's AfterAction); set it while no operator runs.
	AfterAction func(ctx context.Context, cluster string, action planner.Action)
	// AfterBackupStored is the EtcdBackup controller's failpoint, set like AfterAction.
	AfterBackupStored func(ctx context.Context, backup string, location string)
	// WrapOperatorTransport, when set, wraps the HTTP transport of the operators
	// StartOperator starts from now on (e.g. to count the requests they send to the API
	// server); set it while no operator runs.
	WrapOperatorTransport func(http.RoundTripper) http.RoundTripper
	// BackupNowSpacing, when set, is the backup-now spacing of the operators
	// StartOperator starts from now on (default 1 s); set it while no operator runs.
	BackupNowSpacing time.Duration
	// ClusterWorkers, when set, is the EtcdCluster controller's worker count of the
	// operators StartOperator starts from now on (--cluster-workers; default the
	// operator's); set it while no operator runs.
	ClusterWorkers int

	// pinKey is the operators' restore-pin key, got or created as main does, once per
	// Env, in OperatorNamespace: a restarted operator signs and verifies with the same one.
	pinKey []byte

	stopOperator context.CancelFunc
	operatorDone chan struct{}
}

func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(etcdv1beta2.AddToScheme(s))
	utilruntime.Must(cmv1.AddToScheme(s)) // cert-manager issuing (as main.go)
	return s
}

func Setup(t testing.TB) *Env {
	t.Helper()
	return SetupWithOptions(t, bench.Options{})
}

// startOperator runs the operator's manager in this process (inside the bench network
// namespace, so it reaches pod IPs and bench DNS like an in-cluster pod would).
func (e *Env) StartOperator() {
	e.t.Helper()
	logFile := operatorLog(e.t, e.Bench)
	logger := crzap.New(crzap.UseDevMode(true), crzap.WriteTo(logFile))
	// Parts of the manager (its cache's reflectors) log through controller-runtime's
	// global logger, which otherwise prints a stack trace after 30 s to say it was never
	// set: it writes to the operator log of the test that runs now.
	globalLog.Store(&logTarget{w: logFile})
	setGlobalLog()
	mgr := e.newManager(logger, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Goroutines inherit profiler labels from the goroutine that starts them: every
		// goroutine of the manager (workers, informers, etcd and API clients) carries this
		// one, so a CPU profile tells the operator's CPU time from the bench's parts that
		// run in this process (OperatorCPU).
		pprof.Do(ctx, pprof.Labels(OperatorProfileLabel, "manager"), func(ctx context.Context) {
			if err := mgr.Start(ctx); err != nil {
				e.t.Errorf("manager stopped: %v", err)
			}
		})
	}()
	e.stopOperator, e.operatorDone = cancel, done
}

// newManager builds an operator manager with the controllers registered; tune, when
// set, adjusts its options (e.g. leader election for the replicas of ha.go), and
// tuneControllers the controllers' (e.g. the shard of shard.go).
func (e *Env) newManager(logger logr.Logger, tune func(*ctrl.Options), tuneControllers ...func(*controllers.Options)) ctrl.Manager {
	e.t.Helper()
	opts := ctrl.Options{
		Scheme: e.scheme,
		// A restarted operator registers its controller again in this process.
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logger,
	}
	// As main.go, through the same function: the tests cache what production caches
	// and read Secrets from the API server as it does.
	controllers.ApplyCacheOptions(&opts, "")
	// client-go's recorder stops recording an object's events after a burst of 25 (its
	// spam filter) and folds more than 10 similar ones into one: a test asserting that an
	// event was not emitted, or emitted exactly once, would then pass whatever the
	// operator did. The operator under test records every emission; production keeps
	// client-go's defaults.
	recordAll := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize: 1 << 20, QPS: 1 << 20, MaxEvents: 1 << 20,
	}))
	e.t.Cleanup(recordAll.Shutdown)
	opts.EventBroadcaster = recordAll //nolint:staticcheck // the one way to set the correlator's limits
	if tune != nil {
		tune(&opts)
	}
	cfg := rest.CopyConfig(e.Bench.RestConfig())
	if wrap := e.WrapOperatorTransport; wrap != nil {
		cfg.Wrap(wrap)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		e.t.Fatalf("manager: %v", err)
	}
	// The quorum-loss tests ask for a 15 s grace to finish in minutes; the production
	// floor (1m) is checked by the controllers' unit tests.
	if e.pinKey == nil {
		key, err := pinkey.LoadOrCreate(context.Background(), e.C, e.C, OperatorNamespace)
		if err != nil {
			e.t.Fatalf("restore pin key: %v", err)
		}
		e.pinKey = key
	}
	// The tests' MinIO listens on the bench's control-plane address, which is also the
	// API server's: an exception, as an administrator would make it with
	// --allow-s3-endpoint (by default the operator refuses to dial it).
	spacing := time.Second
	if e.BackupNowSpacing > 0 {
		spacing = e.BackupNowSpacing
	}
	copts := controllers.Options{MinQuorumLossGrace: 10 * time.Second,
		AfterAction: e.AfterAction, AfterBackupStored: e.AfterBackupStored, PinKey: e.pinKey,
		AllowS3Endpoints: []string{bench.ControlPlaneIP},
		// As an administrator would allow them (--client-service-types); by default
		// only ClusterIP is (checked by the cluster controller's tests).
		ClientServiceTypes:    []corev1.ServiceType{corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer},
		ClientServiceMetadata: true,
		// backup-now runs one after another (restore_pick_test); the 5-minute spacing is
		// checked by the EtcdBackup controller's tests and the hostile-tenant suite.
		BackupNowSpacing: spacing, ClusterWorkers: e.ClusterWorkers}
	for _, f := range tuneControllers {
		f(&copts)
	}
	if err := controllers.SetupWithManager(mgr, copts); err != nil {
		e.t.Fatalf("setup controllers: %v", err)
	}
	return mgr
}

// OperatorNamespace is the namespace the in-process operator treats as its own (main's
// POD_NAMESPACE): it holds the restore-pin key's Secret, apart from the tenants' default.
const OperatorNamespace = "kube-system"

// OperatorProfileLabel is the pprof label key every goroutine of an in-process operator
// carries.
const OperatorProfileLabel = "etcd-operator"

var (
	setGlobalLogger sync.Once
	globalLog       atomic.Pointer[logTarget]
)

type logTarget struct{ w io.Writer }

// setGlobalLog points controller-runtime's global logger at globalLogWriter, once per
// process; before StartOperator (envtest.InstallCRDs logs through it) nothing is written.
func setGlobalLog() {
	setGlobalLogger.Do(func() { ctrl.SetLogger(crzap.New(crzap.UseDevMode(true), crzap.WriteTo(globalLogWriter{}))) })
}

// globalLogWriter writes to the current test's operator log.
type globalLogWriter struct{}

func (globalLogWriter) Write(p []byte) (int, error) {
	if t := globalLog.Load(); t != nil {
		return t.w.Write(p)
	}
	return len(p), nil
}

// OperatorRunning reports whether the operator StartOperator started is still running
// (its manager has not stopped, e.g. on an error).
func (e *Env) OperatorRunning() bool {
	if e.stopOperator == nil {
		return false
	}
	select {
	case <-e.operatorDone:
		return false
	default:
		return true
	}
}

func (e *Env) StopOperatorNow() {
	if e.stopOperator != nil {
		e.stopOperator()
		<-e.operatorDone
		e.stopOperator = nil
	}
}

func operatorLog(t testing.TB, b *bench.Bench) *os.File {
	f, err := os.OpenFile(filepath.Join(b.Dir(), "operator.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Eventually polls cond until it returns nil or the timeout passes, then dumps the
// cluster state and fails the test.
func (e *Env) Eventually(timeout time.Duration, what string, cond func() error) {
	e.t.Helper()
	if err := Poll(timeout, cond); err != nil {
		e.DumpState()
		e.t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

// PollInterval is how often Eventually and Poll check their condition.
const PollInterval = 250 * time.Millisecond

// Eventually is Env.Eventually for tests without an Env (no state dump).
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	poll.Eventually(t, timeout, PollInterval, what, cond)
}

// Poll calls cond every PollInterval until it returns nil (then Poll returns nil) or
// timeout has passed (then Poll returns cond's last error).
func Poll(timeout time.Duration, cond func() error) error {
	return poll.Until(timeout, PollInterval, cond)
}

func (e *Env) DumpState() {
	ctx := context.Background()
	var cs etcdv1beta2.EtcdClusterList
	if err := e.C.List(ctx, &cs); err == nil {
		for _, c := range cs.Items {
			e.t.Logf("cluster %s/%s status: %+v", c.Namespace, c.Name, c.Status)
		}
	}
	var pods corev1.PodList
	if err := e.C.List(ctx, &pods); err == nil {
		for _, p := range pods.Items {
			e.t.Logf("pod %s/%s node=%s phase=%s ip=%s ready=%v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, PodReady(&p))
		}
	}
	e.t.Logf("operator log: %s", filepath.Join(e.Bench.Dir(), "operator.log"))
}

func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *Env) Create(obj client.Object) {
	e.t.Helper()
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	if err := e.C.Create(context.Background(), obj); err != nil {
		e.t.Fatalf("create %s: %v", obj.GetName(), err)
	}
}

func (e *Env) Cluster(name string) *etcdv1beta2.EtcdCluster {
	e.t.Helper()
	var c etcdv1beta2.EtcdCluster
	if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &c); err != nil {
		e.t.Fatalf("get cluster %s: %v", name, err)
	}
	return &c
}

// update applies mutate to the latest version of a cluster, retrying conflicts.
func (e *Env) Update(name string, mutate func(*etcdv1beta2.EtcdCluster)) {
	e.t.Helper()
	e.Eventually(10*time.Second, "update of "+name, func() error {
		c := e.Cluster(name)
		mutate(c)
		return e.C.Update(context.Background(), c)
	})
}

func ConditionTrue(c *etcdv1beta2.EtcdCluster, t etcdv1beta2.ClusterConditionType) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// AvailableWith reports whether the cluster's status says Available with exactly size
// ready members and none unready: what every wait for a healthy cluster checks first.
func AvailableWith(c *etcdv1beta2.EtcdCluster, size int) bool {
	return ConditionTrue(c, etcdv1beta2.ClusterConditionAvailable) &&
		len(c.Status.Members.Ready) == size && len(c.Status.Members.Unready) == 0
}

// WaitAvailable waits until the cluster reports Available with size ready members and
// etcd itself lists exactly size voting members.
func (e *Env) WaitAvailable(name string, size int, timeout time.Duration) *etcdv1beta2.EtcdCluster {
	e.t.Helper()
	return e.waitAvailable(name, size, timeout, "", func() ([]*EtcdMember, error) { return e.Members(name) })
}

// waitAvailable is WaitAvailable with etcd's member list read by list (over plain HTTP
// or TLS); how is appended to the wait's description.
func (e *Env) waitAvailable(name string, size int, timeout time.Duration, how string, list func() ([]*EtcdMember, error)) *etcdv1beta2.EtcdCluster {
	e.t.Helper()
	var c *etcdv1beta2.EtcdCluster
	e.Eventually(timeout, fmt.Sprintf("%s Available with %d members%s", name, size, how), func() error {
		c = e.Cluster(name)
		if !AvailableWith(c, size) || ConditionTrue(c, etcdv1beta2.ClusterConditionScaling) {
			return fmt.Errorf("status: phase=%s ready=%v unready=%v conditions=%v", c.Status.Phase, c.Status.Members.Ready, c.Status.Members.Unready, c.Status.Conditions)
		}
		ms, err := list()
		if err != nil {
			return err
		}
		voters := 0
		for _, m := range ms {
			if !m.IsLearner {
				voters++
			}
		}
		if voters != size || len(ms) != size {
			return fmt.Errorf("etcd lists %d members (%d voters), want %d voters", len(ms), voters, size)
		}
		return nil
	})
	return c
}

// etcdClient connects through the client Service's DNS name, as an application would.
func (e *Env) EtcdClient(name string) *clientv3.Client {
	e.t.Helper()
	c := e.Cluster(name)
	ep := fmt.Sprintf("http://%s.%s.svc:%d", render.ClientServiceName(c), c.Namespace, etcdv1beta2.EtcdClientPort)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		e.t.Fatalf("etcd client %s: %v", ep, err)
	}
	e.t.Cleanup(func() { cli.Close() })
	return cli
}

// memberPods returns the cluster's member pods by name.
func (e *Env) MemberPods(name string) map[string]corev1.Pod {
	e.t.Helper()
	out, err := e.ListMemberPods(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// ListMemberPods is MemberPods for other goroutines than the test's (monitors): it
// returns the error instead of failing the test, e.g. while the API server restarts.
func (e *Env) ListMemberPods(name string) (map[string]corev1.Pod, error) {
	var pods corev1.PodList
	if err := e.C.List(context.Background(), &pods, client.InNamespace("default"),
		client.MatchingLabelsSelector{Selector: render.ClusterSelector(name)}); err != nil {
		return nil, err
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		out[p.Name] = p
	}
	return out, nil
}

// members lists etcd's members, asking the member pods directly by IP. It never fails
// the test itself, so monitors in other goroutines may call it.
func (e *Env) Members(name string) ([]*EtcdMember, error) {
	ms, err := memberList(e.memberEndpoints(name), nil)
	return ToEtcdMembers(ms), err
}

// memberList is etcd's member list asked of the endpoints (with TLS if cfg is set),
// sorted by name.
func memberList(eps []string, cfg *tls.Config) ([]*etcdserverpb.Member, error) {
	return memberListAs(eps, clientv3.Config{TLS: cfg})
}

// memberListWithin asks for the member list, each attempt bounded at 3 s, asking again
// after an attempt that ran out of time until budget is spent. The list is linearizable
// (it needs the leader): with four benches on two cores an attempt can miss its 3 s right
// after a fault the cluster has already recovered from (a CI run lost TestKillMember that
// way), while what a test reads it for is the membership, not the latency. Any other
// error (refused credentials, a member that answers with an error) is returned at once.
func memberListWithin(cli *clientv3.Client, budget time.Duration) (*clientv3.MemberListResponse, error) {
	deadline := time.Now().Add(budget)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := cli.MemberList(ctx)
		cancel()
		timedOut := errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
		if err == nil || !timedOut || time.Now().Add(3*time.Second).After(deadline) {
			return resp, err
		}
	}
}

// memberListAs is memberList with the client's credentials and TLS from as.
func memberListAs(eps []string, as clientv3.Config) ([]*etcdserverpb.Member, error) {
	if len(eps) == 0 {
		return nil, fmt.Errorf("no member pod has an IP")
	}
	as.Endpoints, as.DialTimeout, as.Logger = eps, 2*time.Second, zap.NewNop()
	cli, err := clientv3.New(as)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	resp, err := memberListWithin(cli, 12*time.Second)
	if err != nil {
		return nil, err
	}
	ms := resp.Members
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	return ms, nil
}

// ToEtcdMembers keeps what tests compare of etcd's members.
func ToEtcdMembers(ms []*etcdserverpb.Member) []*EtcdMember {
	var out []*EtcdMember
	for _, m := range ms {
		out = append(out, &EtcdMember{ID: m.ID, Name: m.Name, IsLearner: m.IsLearner})
	}
	return out
}

type EtcdMember struct {
	ID        uint64
	Name      string
	IsLearner bool
}

func MemberIDs(ms []*EtcdMember) map[uint64]string {
	out := map[uint64]string{}
	for _, m := range ms {
		out[m.ID] = m.Name
	}
	return out
}

// events returns the reasons of the events recorded for an object.
func (e *Env) EventReasons(name string) []string {
	var evs corev1.EventList
	if err := e.C.List(context.Background(), &evs, client.InNamespace("default")); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Name == name && ev.InvolvedObject.Kind == "EtcdCluster" {
			out = append(out, ev.Reason)
		}
	}
	return out
}

func HasAny(list []string, want ...string) bool {
	for _, l := range list {
		for _, w := range want {
			if strings.EqualFold(l, w) {
				return true
			}
		}
	}
	return false
}

// RepoRoot is the directory holding go.mod, found upwards from the test's directory, so
// packages at any depth find config/.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// Attach wraps a bench whose operator runs elsewhere (e.g. as a pod of the bench) so the
// helpers can be used without starting one in-process.
func Attach(t testing.TB, b *bench.Bench) *Env {
	return &Env{t: t, Bench: b, C: b.Client(), scheme: b.Scheme()}
}
