package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// inotify instances are limited per user, machine-wide (fs.inotify.max_user_instances,
// 128 by default), and every bench's processes run as root: kubelets (five each),
// containerd and kube-proxy (one per node), the control plane (about six), and what pods
// start. Benches of parallel test processes share that one limit; a process that finds it
// exhausted fails to start (kube-proxy: "fsnotify watcher init: too many open files"), so
// the machine's limit, not the number of test workers, decides how many benches run
// at once. The bench never raises the limit (no global sysctl).
//
// A bench reserves its estimated need before its processes start and holds the
// reservation until Start returns, when its own instances exist and are counted from
// /proc. Reservations are files in a directory under the tool cache, one per process (a
// process runs one bench at a time), taken under an flock, so concurrent starts see each
// other. Instances a starting bench already opened are counted twice (in use and
// reserved): conservative, and brief.

// inotifyPerNode and inotifyControlPlane are measured on this bench (a 4-node bench
// peaks at 34: kubelet 5, containerd 1, kube-proxy 1 per node; apiserver 3,
// controller-manager 2, the control-plane kube-proxy 1); inotifySlack leaves room for
// what pods and the operator open after Start.
const (
	inotifyPerNode      = 7
	inotifyControlPlane = 6
	inotifySlack        = 12
	// inotifyWaitBudget bounds the wait for room; past it, Start fails naming the
	// processes that hold the instances.
	inotifyWaitBudget = 15 * time.Minute
)

func inotifyNeed(nodes int) int { return inotifyControlPlane + nodes*inotifyPerNode }

func inotifyReservationDir() string { return filepath.Join(CacheDir(), "bench-inotify") }

// reserveInotify waits until the instances in use plus the other benches' reservations
// plus need fit under the limit less inotifySlack, then records need for this process.
// release removes the record.
func reserveInotify(ctx context.Context, need int, logf func(string, ...any)) (release func(), err error) {
	dir := inotifyReservationDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	limit, err := inotifyLimit()
	if err != nil {
		return nil, err
	}
	mine := filepath.Join(dir, strconv.Itoa(os.Getpid()))
	deadline := time.Now().Add(inotifyWaitBudget)
	logged := false
	for {
		ok, used, reserved, err := tryReserveInotify(dir, mine, need, limit, countInotify)
		if err != nil {
			return nil, err
		}
		if ok {
			if logged {
				logf("bench: inotify room found (%d in use, %d reserved by other benches, %d needed, limit %d)", used.total, reserved, need, limit)
			}
			return func() { _ = os.Remove(mine) }, nil
		}
		if !logged {
			logf("bench: waiting for inotify room: %d in use (%s), %d reserved by other benches, %d needed, limit %d", used.total, used, reserved, need, limit)
			logged = true
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("bench: no room for %d inotify instances after %v: %d of %d in use (%s), %d reserved by starting benches; fs.inotify.max_user_instances is shared by every process of this user", need, inotifyWaitBudget, used.total, limit, used, reserved)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bench: waiting for inotify room: %w", ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// tryReserveInotify takes the directory's lock, counts (count: countInotify but in
// tests), and writes this process's reservation if need fits.
func tryReserveInotify(dir, mine string, need, limit int, count func() inotifyUse) (ok bool, used inotifyUse, reserved int, err error) {
	lock, err := os.Open(dir)
	if err != nil {
		return false, used, 0, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return false, used, 0, err
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it too
	if reserved, err = otherReservations(dir, mine); err != nil {
		return false, used, 0, err
	}
	used = count()
	if used.total+reserved+need > limit-inotifySlack {
		return false, used, reserved, nil
	}
	return true, used, reserved, os.WriteFile(mine, []byte(strconv.Itoa(need)), 0o644)
}

// otherReservations sums the reservations of live processes other than this one and
// removes those of processes that are gone.
func otherReservations(dir, mine string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	sum := 0
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p == mine {
			continue
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if !processAlive(pid) {
			_ = os.Remove(p)
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			sum += n
		}
	}
	return sum, nil
}

func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}

func inotifyLimit() (int, error) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// inotifyUse is the inotify instances open on the machine, by command name.
type inotifyUse struct {
	total  int
	byComm map[string]int
	self   int // this process's own
}

func (u inotifyUse) String() string {
	names := make([]string, 0, len(u.byComm))
	for n := range u.byComm {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return u.byComm[b] - u.byComm[a] })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", n, u.byComm[n]))
	}
	return strings.Join(parts, " ")
}

// countInotify counts every process's inotify descriptors. Processes of other users
// are counted too (they have their own limit): an over-estimate, never an under-one.
// The bench shares the host's PID namespace, so /proc shows every bench's processes.
func countInotify() inotifyUse {
	u := inotifyUse{byComm: map[string]int{}}
	self := strconv.Itoa(os.Getpid())
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		n := 0
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && l == "anon_inode:inotify" {
				n++
			}
		}
		if n == 0 {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
		u.byComm[strings.TrimSpace(string(comm))] += n
		u.total += n
		if p.Name() == self {
			u.self = n
		}
	}
	return u
}
