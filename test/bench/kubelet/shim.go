package kubelet

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
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
	Dir      string      `json:"dir"`
	Path     string      `json:"path"`
	Argv     []string    `json:"argv"`
	Env      []string    `json:"env"`
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
	for _, m := range spec.Mounts {
		if err := bindMount(m); err != nil {
			return err
		}
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
	return fmt.Errorf("exec %s: %w", spec.Path, syscall.Exec(spec.Path, spec.Argv, spec.Env))
}

// bindMount mounts m.Source over m.Target, creating the mountpoint (a directory, or an
// empty file when the source is a file, e.g. a subPath of a secret volume). The
// mountpoint is created in the real filesystem: mount namespaces share the filesystem,
// only the mount table is private, so an empty directory is the one trace left behind.
func bindMount(m mountSpec) error {
	st, err := os.Stat(m.Source)
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
	if err := syscall.Mount(m.Source, m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
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
