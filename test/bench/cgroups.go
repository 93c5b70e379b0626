package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupV1Root is where this kind of machine mounts its cgroup v1 hierarchies (and a
// cgroup2 "unified" one that runc mirrors paths into).
const cgroupV1Root = "/sys/fs/cgroup"

// benchHierarchies are the v1 hierarchies the kubelet and runc use; the bench's subtree
// is created in each of them.
var benchHierarchies = []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd"}

// cgroupTree is the bench's own cgroup subtree: <the cgroup this process is in>/<name>,
// in every hierarchy. Nothing outside it is ever created or changed (REAL-NODE.md).
type cgroupTree struct {
	// Rel is the path relative to each hierarchy's root, e.g. /process_api/abc/bench-1234.
	Rel string
	// created lists the directories this tree made (parents included), deepest last.
	created []string
}

// ownCgroup is the path of this process's memory cgroup: the one the machine gives us.
func ownCgroup() (string, error) { return ownCgroupIn("memory") }

// ownCgroupIn is the path of this process's cgroup in the v1 hierarchy of controller h
// (a hierarchy may hold several controllers: "cpu,cpuacct").
func ownCgroupIn(h string) (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), h) {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("no %s cgroup in /proc/self/cgroup (the bench's real nodes need cgroup v1)", h)
}

// newCgroupTree creates <own cgroup>/<name> in every hierarchy, copying cpuset.cpus and
// cpuset.mems down each new cpuset level (a new cpuset directory starts empty, and no
// task may join it then).
func newCgroupTree(name string) (*cgroupTree, error) {
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	t := &cgroupTree{Rel: filepath.Join(own, name)}
	for _, h := range benchHierarchies {
		if err := t.mkdirAll(h, t.Rel); err != nil {
			t.remove()
			return nil, err
		}
	}
	return t, nil
}

// ensure creates rel (below t.Rel) in every hierarchy.
func (t *cgroupTree) ensure(rel string) error {
	for _, h := range benchHierarchies {
		if err := t.mkdirAll(h, filepath.Join(t.Rel, rel)); err != nil {
			return err
		}
	}
	return nil
}

func (t *cgroupTree) mkdirAll(h, rel string) error {
	root := filepath.Join(cgroupV1Root, h)
	if _, err := os.Stat(root); err != nil {
		return fmt.Errorf("cgroup hierarchy %s: %w", h, err)
	}
	cur := root
	for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
		parent := cur
		cur = filepath.Join(cur, part)
		if _, err := os.Stat(cur); err == nil {
			continue
		}
		// Only directories below the tree's own root are deleted unconditionally; its
		// parents are recorded too, and removed if still empty.
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", cur, err)
		}
		t.created = append(t.created, cur)
		if h == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(parent, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(cur, f), v, 0o644); err != nil {
					return fmt.Errorf("copy %s into %s: %w", f, cur, err)
				}
			}
		}
	}
	return nil
}

// setCPUShares writes rel's (below t.Rel) cpu.shares in the cpu hierarchy: its weight
// against its siblings when the CPU is contended.
func (t *cgroupTree) setCPUShares(rel string, shares int) error {
	f := filepath.Join(cgroupV1Root, "cpu", t.Rel, rel, "cpu.shares")
	if err := os.WriteFile(f, []byte(strconv.Itoa(shares)), 0o644); err != nil {
		return fmt.Errorf("set %s: %w", f, err)
	}
	return nil
}

// procsFiles are the cgroup.procs files of rel (below t.Rel) in every hierarchy.
func (t *cgroupTree) procsFiles(rel string) []string {
	var out []string
	for _, h := range benchHierarchies {
		out = append(out, filepath.Join(cgroupV1Root, h, t.Rel, rel, "cgroup.procs"))
	}
	return out
}

// pids lists every process in rel's subtree (memory hierarchy: every process of the
// bench has a memory cgroup under the tree).
func (t *cgroupTree) pids(rel string) []int {
	var out []int
	seen := map[int]bool{}
	_ = filepath.WalkDir(filepath.Join(cgroupV1Root, "memory", t.Rel, rel), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
		return nil
	})
	return out
}

// killAll SIGKILLs every process in rel's subtree until none is left (processes may fork
// while we kill), or gives up after the budget.
func (t *cgroupTree) killAll(rel string, budget time.Duration) error {
	deadline := time.Now().Add(budget)
	for {
		pids := t.pids(rel)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still in cgroup %s after %v: %v", filepath.Join(t.Rel, rel), budget, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT) // a stopped process dies of SIGKILL anyway; a frozen one would not
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// remove kills what is left in the tree and removes every directory below and including
// t.Rel in every hierarchy (the kubelet's and runc's too, and runc's mirror under
// unified/), deepest first, then the parents this tree created.
func (t *cgroupTree) remove() error {
	if t == nil {
		return nil
	}
	errKill := t.killAll("", 10*time.Second)
	var dirs []string
	for _, h := range append(append([]string{}, benchHierarchies...), "unified", "hugetlb", "net_cls", "net_prio", "perf_event", "rdma", "misc") {
		base := filepath.Join(cgroupV1Root, h, t.Rel)
		_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	var errs []error
	if errKill != nil {
		errs = append(errs, errKill)
	}
	for _, d := range dirs {
		if err := rmdirRetry(d); err != nil {
			errs = append(errs, err)
		}
	}
	// Parents this tree created may hold another bench's tree by now (test packages run
	// in parallel): those are left to whoever empties them last.
	for i := len(t.created) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(t.created[i]); err != nil && !errors.Is(err, syscall.ENOENT) &&
			!errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EBUSY) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", t.created[i], err))
		}
	}
	return errors.Join(errs...)
}

// rmdirRetry removes an empty cgroup directory; the kernel refuses (EBUSY) for a moment
// after its last task exited.
func rmdirRetry(d string) error {
	var err error
	for i := 0; i < 100; i++ {
		err = syscall.Rmdir(d)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", d, err)
}

// staleTree matches the name of a bench's tree: bench-<pid of its process>-<sequence>.
var staleTree = regexp.MustCompile(`^bench-(\d+)-\d+$`)

// sweepStaleTrees removes the trees of benches whose process is gone (killed outright,
// e.g. SIGKILL or a hard test timeout): their containers and containerd's shims outlive
// it, reparented but still in the tree. Killing everything in the tree frees the dead
// bench's namespaces, and with them its mounts and network.
func sweepStaleTrees() error {
	own, err := ownCgroup()
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(filepath.Join(cgroupV1Root, "memory", own))
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		m := staleTree.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // its bench still runs (maybe in another test package)
		}
		t := &cgroupTree{Rel: filepath.Join(own, e.Name())}
		if err := t.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cpuUsage is the CPU time every process in rel's subtree (below t.Rel) has used while
// in it: the cpuacct hierarchy's cpuacct.usage, in nanoseconds. It counts processes
// that have exited, so two readings give the CPU a subtree used between them.
func (t *cgroupTree) cpuUsage(rel string) (time.Duration, error) {
	return readCPUUsage(filepath.Join(cgroupV1Root, "cpuacct", t.Rel, rel))
}

// readCPUUsage reads dir's cpuacct.usage.
func readCPUUsage(dir string) (time.Duration, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("%s/cpuacct.usage: %q is not a count of nanoseconds", dir, raw)
	}
	return time.Duration(ns), nil
}
