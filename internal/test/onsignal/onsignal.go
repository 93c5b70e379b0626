// Package onsignal is the one signal handler of a test process: what a test started
// outside the process (a bench's nodes, an envtest's etcd and kube-apiserver) is stopped
// when a signal ends the process, since a signal runs none of the tests' cleanups.
//
// One handler, not one per part: two handlers would both get the signal, and the first
// to finish would exit while the other still stops its part.
package onsignal

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

var (
	mu    sync.Mutex
	next  int
	stops = map[int]func(os.Signal){}
)

// Register has stop run on the first SIGINT, SIGTERM or SIGHUP the process gets, beside
// every other registered stop; the process exits 128+signal once all have returned. The
// returned function unregisters stop (when what it stops has been stopped otherwise).
//
// A signal sent to a whole process group (a CI job killed, a terminal closed) reaches
// the test binary and whatever reads its output (go-test-shards' tee, go test) at once,
// and the reader is usually gone first. Go kills a program that writes to standard
// output or error through a pipe nobody reads (SIGPIPE), unless the program is notified
// of SIGPIPE: then the write only fails. Without that, a stop's first log line killed the
// binary before the bench's nodes were powered off, and containerd's shims, the
// containers and hundreds of cgroups stayed behind. SIGPIPE is notified, not ignored: an
// ignored signal is inherited by the programs the test starts.
func Register(stop func(os.Signal)) (unregister func()) {
	install()
	mu.Lock()
	defer mu.Unlock()
	id := next
	next++
	stops[id] = stop
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(stops, id)
	}
}

var install = sync.OnceFunc(func() {
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	go func() {
		for range pipes { // the failed write is reported to its writer; nothing to do here
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		mu.Lock() // kept: nothing registers or unregisters while the stops run
		var wg sync.WaitGroup
		for _, stop := range stops {
			wg.Go(func() { stop(s) })
		}
		wg.Wait()
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
})
