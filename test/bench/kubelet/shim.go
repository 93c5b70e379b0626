package kubelet

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// shimEnvVar marks a re-exec of the current binary as the container shim; its value is
// the path of a JSON shimSpec.
const shimEnvVar = "ETCD_OPERATOR_BENCH_KUBELET_SHIM"

// mountSpec is one bind mount of a pod volume (or the pod's /tmp) into the container's view.
type mountSpec struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// shimSpec is everything the shim needs to turn itself into the container process.
type shimSpec struct {
	Mounts   []mountSpec `json:"mounts"`
	Hostname string      `json:"hostname"`
	Dir      string      `json:"dir,omitempty"` // workingDir, in the container's view
	// ScratchDir is the working directory when Dir is empty: a per-container directory
	// standing in for the image's writable root, entered before any mount can hide it.
	ScratchDir string   `json:"scratchDir"`
	Path       string   `json:"path"`
	Argv       []string `json:"argv"`
	Env        []string `json:"env"`
}

// MaybeRunShim must be the first statement of main() of every binary that runs the bench
// kubelet (and of TestMain in test binaries). The kubelet starts each container by
// re-executing its own binary in a fresh mount+UTS namespace (made private by os/exec's
// Unshareflags handling); in that child this function bind-mounts the pod's volumes at
// their mountPaths, sets the pod's hostname and execs the real executable, so it never
// returns there. In any other process (marker variable absent) it returns immediately.
func MaybeRunShim() {
	specPath, ok := os.LookupEnv(shimEnvVar)
	if !ok {
		return
	}
	err := runShim(specPath)
	fmt.Fprintf(os.Stderr, "bench kubelet shim: %v\n", err)
	os.Exit(127)
}

func runShim(specPath string) error {
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var spec shimSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("spec %s: %w", specPath, err)
	}
	// Everything on the host side is pinned before the first mount: a volume mounted on a
	// parent of RootDir (say an emptyDir at /tmp while RootDir is under /tmp) would
	// otherwise hide later mount sources, the scratch dir or the executable.
	srcFDs := make([]int, len(spec.Mounts))
	for i, m := range spec.Mounts {
		fd, err := syscall.Open(m.Source, unix.O_PATH|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("mount source %s: %w", m.Source, err)
		}
		srcFDs[i] = fd
	}
	exeFD, err := syscall.Open(spec.Path, syscall.O_RDONLY, 0) // inherited by exec on purpose
	if err != nil {
		return fmt.Errorf("executable: %w", err)
	}
	var exeStat syscall.Stat_t
	if err := syscall.Fstat(exeFD, &exeStat); err != nil {
		return err
	}
	if spec.Dir == "" && spec.ScratchDir != "" {
		if err := os.MkdirAll(spec.ScratchDir, 0o755); err != nil {
			return err
		}
		if err := os.Chdir(spec.ScratchDir); err != nil {
			return err
		}
	}
	for i, m := range spec.Mounts {
		if err := bindMount(srcFDs[i], m); err != nil {
			return err
		}
		syscall.Close(srcFDs[i])
	}
	if spec.Hostname != "" {
		if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
			return fmt.Errorf("sethostname: %w", err)
		}
	}
	if spec.Dir != "" {
		if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
			return err
		}
		if err := os.Chdir(spec.Dir); err != nil {
			return err
		}
	}
	path := spec.Path
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err == nil && st.Dev == exeStat.Dev && st.Ino == exeStat.Ino {
		syscall.Close(exeFD)
	} else {
		// The executable's path is hidden by a mount: run it through the pinned fd.
		path = fmt.Sprintf("/proc/self/fd/%d", exeFD)
	}
	return fmt.Errorf("exec %s: %w", spec.Path, syscall.Exec(path, spec.Argv, spec.Env))
}

// bindMount mounts m.Source over m.Target, creating the mountpoint (a directory, or an
// empty file when the source is a file, e.g. a subPath of a secret volume). The
// mountpoint is created in the real filesystem: mount namespaces share the filesystem,
// only the mount table is private, so an empty directory is the one trace left behind.
func bindMount(srcFD int, m mountSpec) error {
	src := fmt.Sprintf("/proc/self/fd/%d", srcFD)
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("mount source: %w", err)
	}
	if st.IsDir() {
		if err := os.MkdirAll(m.Target, 0o755); err != nil {
			return fmt.Errorf("mountpoint: %w", err)
		}
	} else if _, err := os.Stat(m.Target); os.IsNotExist(err) {
		if err := os.MkdirAll(filepath.Dir(m.Target), 0o755); err != nil {
			return fmt.Errorf("mountpoint: %w", err)
		}
		f, err := os.OpenFile(m.Target, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("mountpoint: %w", err)
		}
		f.Close()
	}
	if err := syscall.Mount(src, m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY)
		if err := syscall.Mount("", m.Target, "", flags, ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", m.Target, err)
		}
	}
	return nil
}
