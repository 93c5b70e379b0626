// Command bench runs the local bench (real control plane + real nodes) in the
// foreground, for demos and manual testing:
//
//	bench up   [--dir D] [--nodes N] [--olm]                run until SIGINT/SIGTERM
//	bench exec --dir D -- CMD [ARG]...                        run CMD inside the bench namespaces
//	bench down --dir D                                        stop a running bench
//	bench fault --dir D kill-pod NS/NAME [SIGNAL] | stop-pod NS/NAME | continue-pod NS/NAME |
//	            node-down NODE | node-up NODE | partition NODE | heal NODE | delay-dns HOSTNAME DURATION
//
// The bench lives in private mount+net namespaces (its nodes in network namespaces of their
// own, pods on 10.244.x, cluster DNS by CoreDNS). `up` opens a listener in the host namespace before entering them
// and proxies it to the apiserver inside, so D/kubeconfig works from the host.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
	"github.com/etcd-operator/etcd-operator/test/bench/olm"
)

const usage = `usage:
  bench up    [--dir D] [--nodes N] [--olm]
  bench exec  --dir D -- CMD [ARG]...
  bench down  --dir D
  bench fault --dir D kill-pod NS/NAME [SIGNAL] | stop-pod NS/NAME | continue-pod NS/NAME |
              node-down NODE | node-up NODE | partition NODE | heal NODE | delay-dns HOSTNAME DURATION
`

// Files in the bench directory the subcommands share.
const (
	pidFile      = "pid"              // pid of the namespaced bench process (nsenter target)
	hostKubecfg  = "kubeconfig"       // for the host, via the proxy
	innerKubecfg = "admin.kubeconfig" // written by package bench, valid inside the namespaces
	registryFile = "registry"         // host:port of the registry proxy, for pushes from the host
	controlSock  = "control.sock"     // fault requests
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "exec":
		err = execIn(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "fault":
		err = fault(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		err = fmt.Errorf("unknown subcommand %q\n%s", os.Args[1], usage)
	}
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(int(ee))
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type exitError int

func (e exitError) Error() string { return "exit " + strconv.Itoa(int(e)) }

func defaultDir() string { return filepath.Join(os.TempDir(), "etcd-operator-bench") }

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "bench directory (kubeconfig, pid, logs, data)")
	nodes := fs.Int("nodes", 3, "number of nodes (1-5)")
	withOLM := fs.Bool("olm", false, "also install OLM ("+images.OLMVersion+", namespace olm), as upstream installs it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}

	if !bench.InNamespace() {
		// Host side: refuse to clobber a live bench, clear the previous run's state (its
		// certs and data belong to a cluster that is gone), open the host listener and
		// re-exec into the namespaces, handing the listener over as fd 3.
		if pid, err := readPid(d); err == nil && alive(pid) {
			return fmt.Errorf("a bench is already running from %s (pid %d); `bench down --dir %s` first", d, pid, d)
		}
		for _, sub := range []string{"etcd", "nodes", "pki", "logs", pidFile, hostKubecfg, innerKubecfg, controlSock, registryFile} {
			if err := os.RemoveAll(filepath.Join(d, sub)); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		// fd 3 serves the API server to the host, fd 4 the bench's image registry (so
		// images can be pushed from the host, e.g. with make bundle-push).
		var files []*os.File
		for range 2 {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			f, err := ln.(*net.TCPListener).File()
			if err != nil {
				return err
			}
			files = append(files, f)
		}
		return bench.EnterNamespaceWith(bench.NamespaceOptions{ExtraFiles: files})
	}

	if err := bench.EnterNamespace(); err != nil { // mounts and lo, inside
		return err
	}
	ln, err := net.FileListener(os.NewFile(3, "host-listener"))
	if err != nil {
		return fmt.Errorf("host listener (fd 3): %w", err)
	}
	regLn, err := net.FileListener(os.NewFile(4, "host-registry-listener"))
	if err != nil {
		return fmt.Errorf("host registry listener (fd 4): %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	b, err := bench.Start(ctx, bench.Options{Dir: d, Nodes: *nodes, OLM: *withOLM, Log: logf})
	if err != nil {
		return err
	}
	defer b.Stop()
	if *withOLM {
		if err := olm.Install(ctx, b.Client(), olm.Options{Logf: logf}); err != nil {
			return fmt.Errorf("install OLM: %w", err)
		}
	}

	go proxy(ctx, ln, "127.0.0.1:"+strconv.Itoa(b.APIServerPort()))
	go proxy(ctx, regLn, b.RegistryAddr())
	hostAddr, regAddr := ln.Addr().String(), regLn.Addr().String()
	// Images pushed to regAddr from the host are what pods get for any name with the same
	// path: the nodes' containerd mirrors every registry to the bench's.
	if err := os.WriteFile(filepath.Join(d, registryFile), []byte(regAddr+"\n"), 0o644); err != nil {
		return err
	}
	ca, cert, key := b.AdminCredentials()
	if err := bench.WriteKubeconfig(filepath.Join(d, hostKubecfg), "https://"+hostAddr, ca, cert, key); err != nil {
		return err
	}
	sock, err := serveControl(ctx, filepath.Join(d, controlSock), b)
	if err != nil {
		return err
	}
	defer sock.Close()
	if err := os.WriteFile(filepath.Join(d, pidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(d, pidFile))

	t := b.Timings()
	fmt.Printf(`bench up: %d nodes (%s), control plane ready in %v, nodes ready in %v
  apiserver (host):      https://%s   kubeconfig %s
  apiserver (inside):    https://127.0.0.1:%d   kubeconfig %s
  image registry:        %s from the host (in %s), %s inside; plain HTTP
  logs:                  %s
try:
  kubectl --kubeconfig %s get nodes -L topology.kubernetes.io/zone
  %s exec --dir %s -- etcdctl --endpoints http://POD.SUBDOMAIN.NAMESPACE.svc:2379 endpoint health
  %s fault --dir %s kill-pod NAMESPACE/POD
stop with Ctrl-C or: %s down --dir %s
`, len(b.Nodes()), strings.Join(b.Nodes(), ", "), t.ControlPlane.Round(time.Millisecond), t.NodesReady.Round(time.Millisecond),
		hostAddr, filepath.Join(d, hostKubecfg), b.APIServerPort(), b.Kubeconfig(),
		regAddr, filepath.Join(d, registryFile), b.RegistryAddr(), filepath.Join(d, "logs"),
		filepath.Join(d, hostKubecfg), os.Args[0], d, os.Args[0], d, os.Args[0], d)

	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "bench: stopping")
	return nil
}

// proxy forwards raw TCP (TLS stays end to end) from the host listener to the apiserver.
func proxy(ctx context.Context, ln net.Listener, target string) {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				return
			}
			defer u.Close()
			done := make(chan struct{}, 2)
			go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			go func() { io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

// execIn replaces this process with nsenter into the bench's mount and net namespaces,
// so the command sees the bench's /etc/hosts and can reach 127.x pod addresses; stdio
// and the exit code pass straight through.
func execIn(args []string) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "bench directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd := fs.Args()
	if len(cmd) == 0 {
		return errors.New("exec: no command; usage: bench exec --dir D -- CMD [ARG]...")
	}
	d, _ := filepath.Abs(*dir)
	pid, err := readPid(d)
	if err != nil {
		return err
	}
	if !alive(pid) {
		return fmt.Errorf("bench pid %d from %s is not running", pid, d)
	}
	argv := append([]string{"nsenter", "-t", strconv.Itoa(pid), "-m", "-n", "--"}, cmd...)
	// Cached etcd and kube tools on PATH, so `bench exec -- etcdctl ...` just works, and
	// the in-namespace admin kubeconfig as default.
	env := []string{
		"KUBECONFIG=" + filepath.Join(d, innerKubecfg),
		"PATH=" + bench.EtcdBinDir(bench.EtcdVersion) + ":" + bench.K8sBinDir() + ":" + os.Getenv("PATH"),
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	return syscall.Exec("/usr/bin/nsenter", argv, env)
}

// down stops the bench running from dir: SIGTERM, wait, then SIGKILL.
func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "bench directory")
	grace := fs.Duration("grace", 60*time.Second, "time to wait after SIGTERM before SIGKILL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, _ := filepath.Abs(*dir)
	pid, err := readPid(d)
	if err != nil {
		return err
	}
	if !alive(pid) {
		fmt.Fprintf(os.Stderr, "bench: pid %d is not running\n", pid)
		os.Remove(filepath.Join(d, pidFile))
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(*grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // polling another process's exit; no wait(2) on non-children
	}
	fmt.Fprintf(os.Stderr, "bench: pid %d still alive after %v, sending SIGKILL\n", pid, *grace)
	return syscall.Kill(pid, syscall.SIGKILL)
}

func readPid(dir string) (int, error) {
	raw, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, fmt.Errorf("no running bench in %s: %w", dir, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Field 3 (after "(comm)") is the state; Z = zombie, X = dead.
	s := string(raw)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// fault sends one request line over the control socket and prints the answer.
func fault(args []string) error {
	fs := flag.NewFlagSet("fault", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "bench directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("fault: missing action\n" + usage)
	}
	d, _ := filepath.Abs(*dir)
	c, err := net.DialTimeout("unix", filepath.Join(d, controlSock), 5*time.Second)
	if err != nil {
		return fmt.Errorf("bench control socket: %w", err)
	}
	defer c.Close()
	if _, err := fmt.Fprintln(c, strings.Join(fs.Args(), " ")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimSpace(line)
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return errors.New(msg)
	}
	fmt.Println(line)
	return nil
}
