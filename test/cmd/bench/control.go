package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/etcd-operator/etcd-operator/test/bench"
	"golang.org/x/sys/unix"
)

// serveControl answers fault requests on a unix socket: one line in ("kill-pod ns/name
// KILL"), one line out ("ok" or "error: ..."). A filesystem socket is reachable from
// the host although the bench runs in its own net namespace.
func serveControl(ctx context.Context, path string, b *bench.Bench) (net.Listener, error) {
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					return
				}
				if err := doFault(b, strings.Fields(line)); err != nil {
					fmt.Fprintf(c, "error: %v\n", err)
					return
				}
				fmt.Fprintln(c, "ok")
			}()
		}
	}()
	return ln, nil
}

func doFault(b *bench.Bench, f []string) error {
	if len(f) == 0 {
		return fmt.Errorf("empty request")
	}
	arg := func(i int) (string, error) {
		if i >= len(f) {
			return "", fmt.Errorf("%s: missing argument %d", f[0], i)
		}
		return f[i], nil
	}
	pod := func() (string, string, error) {
		s, err := arg(1)
		if err != nil {
			return "", "", err
		}
		ns, name, ok := strings.Cut(s, "/")
		if !ok {
			ns, name = "default", s
		}
		return ns, name, nil
	}
	k := b.Faults()
	switch f[0] {
	case "kill-pod":
		ns, name, err := pod()
		if err != nil {
			return err
		}
		sig := syscall.SIGKILL
		if len(f) > 2 {
			n := unix.SignalNum("SIG" + strings.TrimPrefix(strings.ToUpper(f[2]), "SIG"))
			if n == 0 {
				return fmt.Errorf("unknown signal %q", f[2])
			}
			sig = n
		}
		return k.KillPod(ns, name, sig)
	case "stop-pod":
		ns, name, err := pod()
		if err != nil {
			return err
		}
		return k.StopPod(ns, name)
	case "continue-pod":
		ns, name, err := pod()
		if err != nil {
			return err
		}
		return k.ContinuePod(ns, name)
	case "node-down", "node-up", "partition", "heal":
		node, err := arg(1)
		if err != nil {
			return err
		}
		switch f[0] {
		case "node-down":
			return k.NodeDown(node)
		case "node-up":
			return k.NodeUp(node)
		case "partition":
			return k.PartitionNode(node)
		}
		return k.HealNode(node)
	case "delay-dns":
		host, err := arg(1)
		if err != nil {
			return err
		}
		ds, err := arg(2)
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(ds)
		if err != nil {
			return err
		}
		return k.DelayDNS(host, d)
	}
	return fmt.Errorf("unknown fault %q", f[0])
}
