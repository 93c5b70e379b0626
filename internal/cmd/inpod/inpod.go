// Package inpod is what the operator's in-pod programs (internal/cmd/...) share: a flag
// set whose error is one line, the termination-message result file, and the flags that
// name a stored backup.
package inpod

import (
	"flag"
	"fmt"
	"io"
	"os"

	uzap "go.uber.org/zap"
)

// DefaultResultFile is where a program writes its JSON result: the container's
// terminationMessagePath.
const DefaultResultFile = "/dev/termination-log"

// FlagSet is the flag set of a program the operator runs in a pod (restore step,
// backup, verification, snapshot check). The operator renders every flag; a bad one
// comes from a field of the tenant's resource that admission let through. Its error must
// reach the pod's termination message as one line naming the flag, not followed by the
// usage banner the standard flag package prints (which crowded out the cause in status).
func FlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// Parse parses args into fs, reporting a failure as one line on w (stderr).
func Parse(w io.Writer, fs *flag.FlagSet, args []string) bool {
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(w, "%s: %v (the operator renders this flag from the resource's spec)\n", fs.Name(), err)
		return false
	}
	return true
}

// ParseOptions reads args into new options through the flag set flags defines on them
// (every default filled in), reporting a bad flag as one line on w (Parse).
func ParseOptions[O any](w io.Writer, flags func(*O) *flag.FlagSet, args []string) (O, bool) {
	var o O
	ok := Parse(w, flags(&o), args)
	return o, ok
}

// Main is every program's Run: args parsed by ParseOptions (a bad flag is one line on
// stderr and exit code 2), then run with the options and a logger (WithLogger).
func Main[O any](args []string, flags func(*O) *flag.FlagSet, run func(*uzap.Logger, O) int) int {
	o, ok := ParseOptions(os.Stderr, flags, args)
	if !ok {
		return 2
	}
	return WithLogger(o, run)
}

// WithLogger runs run with o and the production logger the programs log with, flushed
// when run returns; it returns run's exit code.
func WithLogger[O any](o O, run func(*uzap.Logger, O) int) int {
	lg, _ := uzap.NewProduction()
	defer lg.Sync() //nolint:errcheck
	return run(lg, o)
}

// WriteResult writes a step's result to its termination message file. The kubelet
// creates that file before the container starts; where it does not exist (outside a
// pod) the result is only logged rather than creating a stray file in /dev.
func WriteResult(lg *uzap.Logger, path string, b []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		lg.Warn("cannot write the result file", uzap.String("path", path), uzap.Error(err))
	}
}
