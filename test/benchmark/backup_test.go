package benchmark

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

const (
	backupEtcdVersion = "v3.7.3"
	backupDBTarget    = 256 << 20
	// Rounds per run: this machine's other work makes single rounds noisy.
	backupRounds = 7
)

// BenchmarkBackup256MiB measures the operator's backup path — the snapshot stream of a
// member piped into one streamed PUT (its length announced by etcd) to a real MinIO by
// backup.SaveSnapshot, the code the EtcdBackup controller runs — against `etcdctl
// snapshot save` to a local file from the same member, interleaved (taking turns going
// first), on a ~256 MiB database.
//
// Reported: the db size, median seconds of both paths, the throughput ratio
// operator/etcdctl (target ≥ 0.9; bytes per second of each, each with its own output
// size), and the operator process's memory growth during a backup (target ≤ 32 MiB):
// VmRSS sampled every 50 ms minus VmRSS just before (after a GC that returned freed
// memory to the OS), worst round. VmHWM would not do: it is process-wide and never goes
// down, so the fill phase would set it. The Go heap's in-use peak over the same samples
// is reported too: it is the part the upload buffers account for, without the runtime's
// own retained-but-unused pages.
//
// Also reported, medians per backup: the CPU time of the client process of each path
// (etcdctl's, from its rusage; this process's own, which in the operator runs the
// backup), of MinIO, and of etcd in each path (both from /proc/<pid>/stat, to 10 ms),
// with client-cpu-ratio = operator/etcdctl.
//
// Every round runs in two placements. Shared: every process may run on every CPU. On
// this project's 2-core machine the operator's path then runs three busy processes
// (etcd, this one, MinIO) where etcdctl's runs two, and MinIO's CPU (~1 CPU-s per
// backup, half of it the MD5 it computes for every object's ETag) lowers the ratio,
// although a real S3 endpoint spends it on machines of its own. Store apart (metrics
// ending in -store-apart): MinIO alone on one CPU, the model of that endpoint; etcd,
// etcdctl and this process on another, so both paths get the same single CPU for the
// member and the client. MinIO keeps its data in memory (miniotest.StartInMemory) for
// the same reason: its writes would otherwise compete for this machine's disk with
// etcdctl's, which a real S3 endpoint's do not.
//
// Each invocation fills a new etcd; run it once: -bench BenchmarkBackup256MiB -benchtime=1x.
func BenchmarkBackup256MiB(b *testing.B) {
	ctx := context.Background()
	etcdctl := etcdtest.Binary(b, backupEtcdVersion, "etcdctl")
	cl := etcdtest.StartCluster(b, 1, backupEtcdVersion)
	ep := cl.Endpoints()[0]
	dbSize := fillEtcd(b, ep, backupDBTarget)
	b.ReportMetric(float64(dbSize)/(1<<20), "db-MiB")

	srv := miniotest.StartInMemory(b)
	srv.MakeBucket(b, "benchmark")
	store, err := backup.NewS3(backup.S3Config{
		Endpoint: srv.Endpoint(), Bucket: "benchmark", ForcePathStyle: true,
		Credentials: backup.AWSCredentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, Region: srv.Region},
	})
	if err != nil {
		b.Fatal(err)
	}
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: []string{ep}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { admin.Close() })

	etcdPID := cl.Members[0].PID()
	place := newCPUPlacement(b)
	var shared, apart backupRuns
	var rssGrowth, heapGrowth float64
	dir := b.TempDir()

	// round runs both paths once; with storeApart, MinIO alone on one CPU and etcd,
	// etcdctl and this process on another, else all of them on all CPUs.
	round := func(i int, storeApart bool) {
		runs := &shared
		if storeApart {
			cpus, ok := place.cpus(2)
			if !ok {
				return // one CPU: nothing to set apart
			}
			runs = &apart
			place.pin(b, srv.PID(), cpus[1])
			place.pin(b, etcdPID, cpus[0])
			place.pin(b, os.Getpid(), cpus[0]) // and so the etcdctl it starts
			defer func() {
				for _, pid := range []int{srv.PID(), etcdPID, os.Getpid()} {
					place.pin(b, pid)
				}
			}()
		}
		var ctlSize int64
		var ctlTook time.Duration
		runCtl := func() {
			file := filepath.Join(dir, fmt.Sprintf("snap-%d.db", i))
			etcd0 := procCPU(b, etcdPID)
			start := time.Now()
			cmd := exec.Command(etcdctl, "--endpoints", ep, "snapshot", "save", file)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("etcdctl snapshot save: %v\n%s", err, out)
			}
			ctlTook = time.Since(start)
			runs.ctlCPU = append(runs.ctlCPU, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			runs.etcdCtlPathCPU = append(runs.etcdCtlPathCPU, procCPU(b, etcdPID)-etcd0)
			st, err := os.Stat(file)
			if err != nil {
				b.Fatal(err)
			}
			ctlSize = st.Size()
			os.Remove(file)
		}
		// The operator's path, with its memory sampled.
		var res *backup.SnapshotResult
		var opTook time.Duration
		runOp := func() {
			mem := startMemSampler(b)
			self0, store0, etcd0 := selfCPU(b), procCPU(b, srv.PID()), procCPU(b, etcdPID)
			start := time.Now()
			var err error
			res, err = backup.SaveSnapshot(ctx, admin, store, backup.SnapshotRequest{Key: fmt.Sprintf("benchmark/snap-%d.db", i)})
			opTook = time.Since(start)
			runs.opCPU = append(runs.opCPU, selfCPU(b)-self0)
			runs.storeCPU = append(runs.storeCPU, procCPU(b, srv.PID())-store0)
			runs.etcdOpPathCPU = append(runs.etcdOpPathCPU, procCPU(b, etcdPID)-etcd0)
			rss, heap := mem.stop()
			if err != nil {
				b.Fatalf("operator backup: %v", err)
			}
			rssGrowth, heapGrowth = max(rssGrowth, rss), max(heapGrowth, heap)
			b.Logf("round %d: operator rss +%.1f MiB, heap +%.1f MiB", i, rss, heap)
		}
		// The two paths take turns going first: on a shared machine the load drifts
		// within a round, and a fixed order would hand the drift to one side.
		if i%2 == 0 {
			runCtl()
			runOp()
		} else {
			runOp()
			runCtl()
		}
		if res.Object.Size < ctlSize*9/10 {
			b.Fatalf("operator stored %d bytes, etcdctl %d", res.Object.Size, ctlSize)
		}
		runs.ctlTimes, runs.opTimes = append(runs.ctlTimes, ctlTook), append(runs.opTimes, opTook)
		runs.ctlRate = append(runs.ctlRate, float64(ctlSize)/ctlTook.Seconds())
		runs.opRate = append(runs.opRate, float64(res.Object.Size)/opTook.Seconds())
		b.Logf("round %d (store apart: %v): etcdctl %v (%d B), operator %v (%d B)", i, storeApart, ctlTook, ctlSize, opTook, res.Object.Size)
		if err := store.Delete(ctx, res.Object.Key); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	for i := 0; i < b.N*backupRounds; i++ {
		round(i, false)
		round(i, true)
	}
	b.StopTimer()
	b.ReportMetric(rssGrowth, "rss-growth-MiB")
	b.ReportMetric(heapGrowth, "heap-growth-MiB")
	shared.report(b, "")
	if len(apart.opTimes) > 0 {
		apart.report(b, "-store-apart")
	}
	b.Logf("db %.0f MiB: RSS growth %.1f MiB (target ≤ 32), heap growth %.1f MiB", float64(dbSize)/(1<<20), rssGrowth, heapGrowth)
}

// backupRuns are the measurements of BenchmarkBackup256MiB's rounds in one placement.
type backupRuns struct {
	ctlTimes, opTimes []time.Duration
	ctlRate, opRate   []float64
	// CPU time per backup of each process in the two paths (see the doc comment).
	ctlCPU, opCPU, storeCPU, etcdCtlPathCPU, etcdOpPathCPU []time.Duration
}

// report reports the medians, each metric's name ending in suffix.
func (r *backupRuns) report(b *testing.B, suffix string) {
	ratio := medianF(r.opRate) / medianF(r.ctlRate)
	b.ReportMetric(medianD(r.ctlTimes).Seconds(), "etcdctl-s"+suffix)
	b.ReportMetric(medianD(r.opTimes).Seconds(), "operator-s"+suffix)
	b.ReportMetric(ratio, "throughput-ratio"+suffix)
	b.ReportMetric(medianD(r.ctlCPU).Seconds(), "etcdctl-cpu-s"+suffix)
	b.ReportMetric(medianD(r.opCPU).Seconds(), "operator-cpu-s"+suffix)
	b.ReportMetric(medianD(r.opCPU).Seconds()/medianD(r.ctlCPU).Seconds(), "client-cpu-ratio"+suffix)
	b.ReportMetric(medianD(r.storeCPU).Seconds(), "minio-cpu-s"+suffix)
	b.ReportMetric(medianD(r.etcdCtlPathCPU).Seconds(), "etcd-cpu-s-etcdctl-path"+suffix)
	b.ReportMetric(medianD(r.etcdOpPathCPU).Seconds(), "etcd-cpu-s-operator-path"+suffix)
	b.Logf("placement %q: etcdctl %v, operator %v, throughput ratio %.2f (target ≥ 0.9)", suffix, r.ctlTimes, r.opTimes, ratio)
}

// fillEtcd writes random (incompressible) 1 MiB values from parallel writers until the
// member's database reaches target bytes, and returns its size.
func fillEtcd(b *testing.B, ep string, target int64) int64 {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	const valueSize, writers = 1 << 20, 8
	// Values are slices of one random buffer at varying offsets: distinct, and no
	// per-put generation cost.
	buf := make([]byte, 2*valueSize)
	if _, err := rand.Read(buf); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var next atomic.Int64
	var size atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for size.Load() < target {
				n := next.Add(1)
				off := int(n*4099) % valueSize
				if _, err := cli.Put(ctx, fmt.Sprintf("/fill/%08d", n), string(buf[off:off+valueSize])); err != nil {
					errs <- err
					return
				}
				if n%16 == 0 {
					st, err := cli.Status(ctx, ep)
					if err != nil {
						errs <- err
						return
					}
					size.Store(st.DbSize)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("fill: %v", err)
	}
	st, err := cli.Status(ctx, ep)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d keys, db %d MiB in %v", next.Load(), st.DbSize>>20, time.Since(start).Round(time.Millisecond))
	return st.DbSize
}

// memSampler records the peak VmRSS and Go heap in-use bytes every 50 ms.
type memSampler struct {
	rss0, heap0       uint64
	peakRSS, peakHeap uint64
	done              chan struct{}
	wg                sync.WaitGroup
}

func startMemSampler(b *testing.B) *memSampler {
	// Start from a clean slate: freed memory (e.g. the fill's values) returned to the OS.
	runtime.GC()
	debug.FreeOSMemory()
	m := &memSampler{done: make(chan struct{})}
	m.rss0, m.heap0 = vmRSS(b), heapInUse()
	m.peakRSS, m.peakHeap = m.rss0, m.heap0
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.done:
				return
			case <-t.C:
				m.peakRSS = max(m.peakRSS, vmRSS(b))
				m.peakHeap = max(m.peakHeap, heapInUse())
			}
		}
	}()
	return m
}

// stop returns the growth of RSS and heap in MiB.
func (m *memSampler) stop() (rss, heap float64) {
	close(m.done)
	m.wg.Wait()
	return float64(m.peakRSS-m.rss0) / (1 << 20), float64(m.peakHeap-m.heap0) / (1 << 20)
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// vmRSS reads the process's resident set size from /proc/self/status.
func vmRSS(b *testing.B) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Error(err)
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Error(err)
			}
			return kb << 10
		}
	}
	b.Error("no VmRSS in /proc/self/status")
	return 0
}

func medianD(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func medianF(fs []float64) float64 {
	s := append([]float64(nil), fs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
