package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Environment variables the namespace re-exec uses to talk to itself.
const (
	// envInNamespace marks a process that already runs inside the bench's private
	// mount+net namespaces; its value is the directory holding the namespace's files.
	envInNamespace = "ETCD_OPERATOR_BENCH_NS"
	// envNamespaceSearch overrides the default search namespace of resolv.conf.
	envNamespaceSearch = "ETCD_OPERATOR_BENCH_SEARCH_NS"
)

// NamespaceOptions tune EnterNamespaceWith.
type NamespaceOptions struct {
	// ExtraFiles are inherited by the namespaced child as fds 3, 4, ... in order. The
	// bench command uses this to hand a listener opened in the host network namespace
	// to the child, so the host can reach the apiserver that lives inside.
	ExtraFiles []*os.File
	// SearchNamespace is the Kubernetes namespace listed first in resolv.conf's search
	// line (default "default").
	SearchNamespace string
}

// InNamespace reports whether this process runs inside the bench namespaces.
func InNamespace() bool { return os.Getenv(envInNamespace) != "" }

// namespaceDir is where the namespace's hosts and resolv.conf live ("" outside).
func namespaceDir() string { return os.Getenv(envInNamespace) }

// HostsFile is the file bind-mounted over /etc/hosts in the bench namespace: the bench's
// cluster DNS. Empty outside the namespace.
func HostsFile() string {
	if d := namespaceDir(); d != "" {
		return filepath.Join(d, "hosts")
	}
	return ""
}

// EnterNamespace is meant to be the first thing main() or TestMain does. Outside the bench namespaces it re-executes the current binary
// with the same arguments in new mount and network namespaces, waits for it and exits
// with its exit code: it never returns there. Inside (the re-executed child) it returns
// nil once the namespace is set up, and the program goes on as usual.
//
// Why namespaces: the bench network (a bridge, 10.x addresses, routes, kube-proxy's
// rules) and the nodes' daemons' files (/run, /var/lib, /var/log, the kubelet's sysctls,
// /etc/resolv.conf pointing at cluster DNS) must never touch the machine or another test
// package running in parallel: a private net and mount namespace keeps all of it here.
func EnterNamespace() error { return EnterNamespaceWith(NamespaceOptions{}) }

// EnterNamespaceWith is EnterNamespace with options.
func EnterNamespaceWith(opts NamespaceOptions) error {
	if InNamespace() {
		return setupInside()
	}
	code, err := reexecInNamespace(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: entering namespace: %v\n", err)
		os.Exit(125)
	}
	os.Exit(code)
	return nil // unreachable
}

// reexecInNamespace runs /proc/self/exe in fresh namespaces and returns its exit code.
func reexecInNamespace(opts NamespaceOptions) (int, error) {
	dir, err := os.MkdirTemp("", "bench-ns-")
	if err != nil {
		return 0, err
	}
	// The child's files are removed once it is gone; nothing else refers to them.
	defer os.RemoveAll(dir)

	search := opts.SearchNamespace
	if search == "" {
		search = "default"
	}
	if err := writeNamespaceFiles(dir, search); err != nil {
		return 0, err
	}

	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = opts.ExtraFiles
	cmd.Env = append(os.Environ(), envInNamespace+"="+dir, envNamespaceSearch+"="+search)
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		// If this parent is killed outright (e.g. go test's hard timeout), take the child
		// with it; the child in turn stops every process it started.
		Pdeathsig: syscall.SIGTERM,
	}
	if os.Geteuid() != 0 {
		// Unprivileged users can still get mount+net namespaces inside a user namespace
		// where they are root.
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	cmd.SysProcAttr = attr

	// Signals aimed at the parent (Ctrl-C, `bench down` on the wrong pid, go test's
	// SIGQUIT on timeout) are forwarded so the child can clean up and report.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("re-exec in new mount+net namespaces (needs root or user namespaces): %w", err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		// A child that ended without stopping its benches (a panic, such as go test's
		// -test.timeout, or SIGKILL) left their nodes' processes (containerd's shims,
		// containers) running in its cgroup trees; the next bench would sweep them, but
		// there may be none for a long time. Its pid is gone now, so its trees are stale.
		if serr := sweepStaleTrees(); serr != nil {
			fmt.Fprintf(os.Stderr, "bench: sweeping what the test process left: %v\n", serr)
		}
		done <- err
	}()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), nil
				}
				return ee.ExitCode(), nil
			}
			if err != nil {
				return 0, err
			}
			return 0, nil
		}
	}
}

// writeNamespaceFiles creates the hosts file and resolv.conf the child bind-mounts.
func writeNamespaceFiles(dir, search string) error {
	host, _ := os.Hostname()
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if host != "" && host != "localhost" {
		// Programs that resolve their own hostname (etcd, Go's os.Hostname users) must not
		// wait on a DNS server that does not exist.
		hosts += "127.0.0.1\t" + host + "\n"
	}
	hosts += "# cluster DNS is CoreDNS (resolv.conf); names appended here resolve in this namespace only\n"
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(hosts), 0o644); err != nil {
		return err
	}
	// Cluster DNS (CoreDNS behind its ClusterIP, reached through the kube-proxy the bench
	// runs in this namespace): the test process and an in-process operator resolve member
	// and Service names as a pod would. Nothing leaks to the host's resolver.
	resolv := fmt.Sprintf("nameserver "+ClusterDNSIP+"\nsearch %s.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 timeout:1 attempts:1\n", search)
	return os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(resolv), 0o644)
}

// setupInside runs in the re-executed child. It is idempotent per process because the
// child's own children (bench processes of the same binary, e.g. the kubelet shim) also
// carry the marker and may call EnterNamespace again: they find the mounts done.
func setupInside() error {
	dir := namespaceDir()
	mounted, err := alreadyBound(filepath.Join(dir, "hosts"), "/etc/hosts")
	if err != nil {
		return err
	}
	if !mounted {
		// Make every mount private so our bind mounts never propagate back to the host
		// (systemd makes / shared by default).
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make / rprivate: %w", err)
		}
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring lo up: %w", err)
		}
		if err := privateNodeDirs(dir); err != nil {
			return err
		}
		for _, f := range []string{"hosts", "resolv.conf"} {
			if err := bindOver(filepath.Join(dir, f), "/etc/"+f); err != nil {
				return err
			}
		}
	}
	return nil
}

// alreadyBound reports whether target is the same file as src (after a bind mount).
func alreadyBound(src, target string) (bool, error) {
	var a, b unix.Stat_t
	if err := unix.Stat(src, &a); err != nil {
		return false, fmt.Errorf("bench namespace file: %w", err)
	}
	if err := unix.Stat(target, &b); err != nil {
		return false, nil
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}

// bindOver bind-mounts src over target. /etc/resolv.conf is often a symlink (to
// systemd-resolved's stub); mounting follows it, so the link's destination is covered,
// which is what readers see too. A dangling link gets a file created at its
// destination inside our private namespace view first.
func bindOver(src, target string) error {
	if _, err := os.Stat(target); errors.Is(err, os.ErrNotExist) {
		real := target
		if l, lerr := os.Readlink(target); lerr == nil {
			if !filepath.IsAbs(l) {
				l = filepath.Join(filepath.Dir(target), l)
			}
			real = l
			if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(real, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("create mount point %s: %w", real, err)
		}
		f.Close()
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s over %s: %w", src, target, err)
	}
	return nil
}

// loopbackUp sets IFF_UP on lo, which a fresh net namespace leaves down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// searchNamespace is the namespace resolv.conf searches first.
func searchNamespace() string {
	if s := os.Getenv(envNamespaceSearch); s != "" {
		return s
	}
	return "default"
}

// privateNodeDirs gives the namespace what the real nodes' daemons would otherwise write on
// the machine: empty tmpfs mounts over /run (containerd, runc, CNI netns pins, iptables'
// lock), /var/lib (libcni's result cache) and /var/log (the kubelet's container log
// links), and, over the host-global sysctls the kubelet insists on, files that already hold
// the values it wants, so it reads them and writes nothing (REAL-NODE.md, workaround 2).
// All of it is visible only inside this private mount namespace.
func privateNodeDirs(dir string) error {
	for _, d := range []string{"/run", "/var/lib", "/var/log"} {
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("private tmpfs on %s: %w", d, err)
		}
	}
	if err := os.MkdirAll("/run/netns", 0o755); err != nil {
		return err
	}
	for key, value := range kubeletSysctls {
		src := filepath.Join(dir, "sysctl-"+strings.ReplaceAll(key, "/", "."))
		if err := os.WriteFile(src, []byte(value+"\n"), 0o644); err != nil {
			return err
		}
		if err := unix.Mount(src, "/proc/sys/"+key, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind over /proc/sys/%s: %w", key, err)
		}
	}
	return nil
}

// kubeletSysctls are the machine-wide sysctls the kubelet checks at start (and would set
// if they differed), with the values it wants.
var kubeletSysctls = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}
