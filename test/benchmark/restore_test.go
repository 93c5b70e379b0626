package benchmark

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

// restoreMembers is the size of the restored cluster.
const restoreMembers = 3

// BenchmarkRestore256MiB measures restoring a ~256 MiB backup into a new 3-member
// cluster the operator's way against the bare way, interleaved, on the same snapshot:
//
//   - operator: each member runs restore.Restore, the program of a restored member's
//     init container (`etcd-operator restore`), as that container runs it: download the
//     object from a real MinIO (its stored SHA-256 verified while streaming, pinned to
//     the checksum the EtcdRestore controller verified, so the snapshot checks that
//     controller ran on those bytes are not run again) straight into the new data
//     directory, and the rest of the data directory written around it (what etcdutl's
//     restore writes, without its copy of the database);
//   - bare: `etcdutl snapshot restore` of the same bytes, already on local disk, per member;
//
// then, for both, the 3 etcd processes start and the round ends when every member
// answers /health (a leader and a committed read). The 3 members restore concurrently in
// both paths, as init containers on 3 nodes would. Each round checks the restored
// cluster holds every key of the source (outside the timing).
//
// Reported: the db size, median seconds of both paths and their ratio operator/bare
// (target ≤ 1.5), and the median seconds of the operator's restore step alone.
//
// Measured directly rather than through the EtcdRestore controller on the bench: it
// leaves out what is not restore work (scheduling the member pods, pulling images,
// the controller's own verification download of the backup before it creates the
// cluster, DNS records appearing), which would swamp the comparison on 2 cores.
//
// Each invocation fills a new etcd; run it once: -bench BenchmarkRestore256MiB -benchtime=1x.
func BenchmarkRestore256MiB(b *testing.B) {
	ctx := context.Background()
	etcdutl := etcdtest.Binary(b, backupEtcdVersion, "etcdutl")
	src := etcdtest.StartCluster(b, 1, backupEtcdVersion)
	dbSize := fillEtcd(b, src.Endpoints()[0], backupDBTarget)
	b.ReportMetric(float64(dbSize)/(1<<20), "db-MiB")
	keys := keyCount(b, src.Endpoints())

	srv := miniotest.Start(b)
	srv.MakeBucket(b, "benchmark")
	store, err := backup.NewS3(backup.S3Config{
		Endpoint: srv.Endpoint(), Bucket: "benchmark", ForcePathStyle: true,
		Credentials: backup.AWSCredentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, Region: srv.Region},
	})
	if err != nil {
		b.Fatal(err)
	}
	obj := storeSnapshot(b, src.Endpoints()[0], store, "benchmark/restore.db")
	// The source is no longer needed: its CPU and memory are the rounds'.
	src.Members[0].Stop(b)
	// The bare path's input: the very bytes stored, on local disk.
	file := localCopy(b, store, obj.Key)

	var bareTimes, opTimes, stepTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N*backupRounds; i++ {
		var bare, op roundTimes
		runBare := func() {
			bare = restoreRound(b, keys, func(m *etcdtest.Member, ic, token string) error {
				out, err := exec.Command(etcdutl, "snapshot", "restore", file,
					"--name", m.Name, "--data-dir", m.DataDir, "--initial-advertise-peer-urls", m.PeerURL,
					"--initial-cluster", ic, "--initial-cluster-token", token).CombinedOutput()
				if err != nil {
					return fmt.Errorf("etcdutl snapshot restore: %w\n%s", err, out)
				}
				return nil
			})
		}
		runOp := func() {
			op = restoreRound(b, keys, func(m *etcdtest.Member, ic, token string) error {
				_, err := restore.Restore(ctx, restore.Options{
					Store: store, Key: obj.Key, SHA256: obj.SHA256, PinVerified: true,
					Name: m.Name, DataDir: m.DataDir, PeerURLs: []string{m.PeerURL},
					InitialCluster: ic, InitialClusterToken: token, Log: zap.NewNop(),
				})
				return err
			})
		}
		// The paths take turns going first, as in BenchmarkBackup256MiB.
		if i%2 == 0 {
			runBare()
			runOp()
		} else {
			runOp()
			runBare()
		}
		bareTimes = append(bareTimes, bare.total)
		opTimes = append(opTimes, op.total)
		stepTimes = append(stepTimes, op.restore)
		b.Logf("round %d: bare %v (etcdutl %v), operator %v (restore step %v)",
			i, bare.total.Round(time.Millisecond), bare.restore.Round(time.Millisecond),
			op.total.Round(time.Millisecond), op.restore.Round(time.Millisecond))
	}
	b.StopTimer()
	ratio := medianD(opTimes).Seconds() / medianD(bareTimes).Seconds()
	b.ReportMetric(medianD(bareTimes).Seconds(), "bare-s")
	b.ReportMetric(medianD(opTimes).Seconds(), "operator-s")
	b.ReportMetric(medianD(stepTimes).Seconds(), "operator-restore-step-s")
	b.ReportMetric(ratio, "time-ratio")
	b.Logf("db %.0f MiB, %d keys, %d members: bare %v, operator %v, time ratio %.2f (target ≤ 1.5)",
		float64(dbSize)/(1<<20), keys, restoreMembers, bareTimes, opTimes, ratio)
}

// roundTimes are the durations of one restore round.
type roundTimes struct {
	restore time.Duration // until every member's data dir is restored
	total   time.Duration // until every member is healthy
}

// restoreRound restores a new cluster of restoreMembers members with restoreOne (run
// for all members at once), starts them, waits until all are healthy, checks the keys,
// then stops them and removes their data.
func restoreRound(b *testing.B, wantKeys int, restoreOne func(m *etcdtest.Member, initialCluster, token string) error) roundTimes {
	b.Helper()
	dst := etcdtest.StartCluster(b, 0, backupEtcdVersion) // a new token, no members yet
	var ms []*etcdtest.Member
	var ic []string
	for i := range restoreMembers {
		m := dst.NewMember(fmt.Sprintf("r%d", i), "")
		ms = append(ms, m)
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	initial := strings.Join(ic, ",")
	defer func() {
		for _, m := range ms {
			if m.Running() {
				m.Stop(b)
			}
			// Each round writes ~1 GiB of data dirs: free the disk for the next.
			os.RemoveAll(m.DataDir)
		}
	}()

	start := time.Now()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { errs[i] = restoreOne(m, initial, dst.Token) })
	}
	wg.Wait()
	var t roundTimes
	t.restore = time.Since(start)
	for i, err := range errs {
		if err != nil {
			b.Fatalf("restore %s: %v", ms[i].Name, err)
		}
	}
	// Started together: each member needs the others for a quorum before it is healthy.
	for _, m := range ms {
		wg.Go(func() { dst.StartFromDataDir(m, initial) })
	}
	wg.Wait()
	t.total = time.Since(start)
	if b.Failed() {
		b.FailNow()
	}
	if got := keyCount(b, dst.Endpoints()); got != wantKeys {
		b.Fatalf("restored cluster has %d keys, the source had %d", got, wantKeys)
	}
	return t
}

// keyCount counts the keys of a cluster with a linearizable read.
func keyCount(b *testing.B, eps []string) int {
	b.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		b.Fatal(err)
	}
	return int(r.Count)
}

// storeSnapshot stores a snapshot of the member with the operator's backup path.
func storeSnapshot(b *testing.B, ep string, store backup.Store, key string) backup.Object {
	b.Helper()
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: []string{ep}})
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	res, err := backup.SaveSnapshot(context.Background(), admin, store, backup.SnapshotRequest{Key: key})
	if err != nil {
		b.Fatal(err)
	}
	return res.Object
}

// localCopy downloads the object (verified) into a file and returns its path.
func localCopy(b *testing.B, store backup.Store, key string) string {
	b.Helper()
	rc, _, err := store.Get(context.Background(), key)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	p := filepath.Join(b.TempDir(), "snapshot.db")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, rc); err != nil {
		b.Fatal(err)
	}
	return p
}
