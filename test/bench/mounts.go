package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountPoints lists this mount namespace's mount points at or below dir.
func mountPoints(dir string) ([]string, error) {
	return mountPointsIn("/proc/self/mountinfo", dir)
}

// mountPointsIn lists the mount points at or below dir in the mountinfo file at path.
func mountPointsIn(path, dir string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp == dir || strings.HasPrefix(mp, strings.TrimSuffix(dir, "/")+"/") {
			out = append(out, mp)
		}
	}
	return out, sc.Err()
}

// unescapeMountinfo undoes the octal escapes (\040 for a space, ...) of mountinfo fields.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount at or below dir, deepest first, until none is left.
// It must succeed before dir is removed: a bind mount left there (a volume, a container's
// root file system) would make os.RemoveAll delete what the mount shows.
func unmountUnder(dir string) error {
	dir = filepath.Clean(dir)
	for round := 0; round < 10; round++ {
		mps, err := mountPoints(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		sort.Slice(mps, func(i, j int) bool { return len(mps[i]) > len(mps[j]) })
		for _, mp := range mps {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", mp, err)
			}
		}
	}
	mps, _ := mountPoints(dir)
	return fmt.Errorf("mounts under %s would not go away: %v", dir, mps)
}

// removeNetnsPins releases the network namespaces pinned under the bench's private
// /run/netns (the nodes' and containerd's pod sandboxes').
func removeNetnsPins() error {
	if err := unmountUnder("/run/netns"); err != nil {
		return err
	}
	ents, err := os.ReadDir("/run/netns")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		_ = os.Remove(filepath.Join("/run/netns", e.Name()))
	}
	return nil
}

// hasMounts reports whether anything is (or may be: the mount table was unreadable)
// mounted under the bench's directory.
func (b *Bench) hasMounts() bool {
	mps, err := mountPoints(b.dir)
	return err != nil || len(mps) > 0
}

// nodeMountPoints lists the mount points at or below dir in the mount table of process
// pid (a node's containerd: the node's own table).
func nodeMountPoints(pid int, dir string) ([]string, error) {
	return mountPointsIn(fmt.Sprintf("/proc/%d/mountinfo", pid), dir)
}
