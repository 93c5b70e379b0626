package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// machineState is what a bench must leave as it found it, seen from the host's
// namespaces: mounts, network namespaces, firewall rules and the sysctls the kubelet and
// kube-proxy care about. (Processes and cgroups are checked by benchLeftovers: other
// test packages may run benches of their own meanwhile.)
type machineState struct {
	mounts, netns, rules, sysctls []string
}

func snapshotMachine(t *testing.T) machineState {
	t.Helper()
	var s machineState
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) > 4 {
				s.mounts = append(s.mounts, fields[4])
			}
		}
		f.Close()
	}
	if ns, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ns {
			s.netns = append(s.netns, e.Name())
		}
	}
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		if out, err := exec.Command(tool).Output(); err == nil {
			for _, l := range strings.Split(string(out), "\n") {
				// Comments carry timestamps, and counters change by themselves.
				if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, ":") {
					s.rules = append(s.rules, tool+": "+l)
				}
			}
		}
	}
	for _, k := range []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
		"net/bridge/bridge-nf-call-iptables", "net/netfilter/nf_conntrack_max"} {
		v, _ := os.ReadFile("/proc/sys/" + k)
		s.sysctls = append(s.sysctls, k+"="+strings.TrimSpace(string(v)))
	}
	return s
}

// diff lists what after has that s had not (and changed sysctls).
func (s machineState) diff(after machineState) []string {
	var out []string
	add := func(kind string, a, b []string) {
		had := map[string]int{}
		for _, x := range a {
			had[x]++
		}
		var extra []string
		for _, x := range b {
			if had[x] > 0 {
				had[x]--
				continue
			}
			extra = append(extra, x)
		}
		sort.Strings(extra)
		for _, x := range extra {
			out = append(out, kind+" left behind: "+x)
		}
	}
	add("mount", s.mounts, after.mounts)
	add("network namespace", s.netns, after.netns)
	add("firewall rule", s.rules, after.rules)
	add("sysctl change", s.sysctls, after.sysctls)
	return out
}

// benchLeftovers lists the processes and cgroups of the bench whose namespaced process
// had pid benchPID and whose directory is dir: its cgroup tree is named bench-<pid>-<n>,
// and its node daemons name dir on their command lines.
func benchLeftovers(benchPID int, dir string) []string {
	tag := "/bench-" + strconv.Itoa(benchPID) + "-"
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cg), tag) || strings.Contains(string(cmd), dir+"/") {
			out = append(out, "process "+e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd", "unified"} {
		_ = filepath.WalkDir(filepath.Join("/sys/fs/cgroup", h), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.Contains(p+"/", tag) {
				out = append(out, "cgroup "+p)
				return filepath.SkipDir
			}
			return nil
		})
	}
	return out
}
