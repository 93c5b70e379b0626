package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMountinfoUnescape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/plain/path", "/plain/path"},
		{"", ""},
		{`/with\040space`, "/with space"},
		{`/tab\011here`, "/tab\there"},
		{`/back\134slash`, `/back\slash`},
		{`/nl\012`, "/nl\n"},
		{`\040lead`, " lead"},
		{`/two\040\040spaces`, "/two  spaces"},
		// An escaped backslash followed by digits is a backslash and digits, not an escape.
		{`/x\134040`, `/x\040`},
		// Not escapes: too short, not octal, too large for a byte.
		{`/end\04`, `/end\04`},
		{`/end\`, `/end\`},
		{`/bad\089`, `/bad\089`},
		{`/big\777`, `/big\777`},
	} {
		if got := unescapeMountinfo(tc.in); got != tc.want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// checkUnder fails for any mount point that is neither dir nor below it.
func checkUnder(t *testing.T, dir string, mps []string) {
	t.Helper()
	for _, mp := range mps {
		if mp != dir && !strings.HasPrefix(mp, dir+"/") {
			t.Errorf("mountPoints(%q) lists %q", dir, mp)
		}
	}
}

// TestMountPointsHere only reads this process's mountinfo.
func TestMountPointsHere(t *testing.T) {
	empty := t.TempDir()
	mps, err := mountPoints(empty)
	if err != nil {
		t.Fatal(err)
	}
	if len(mps) != 0 {
		t.Errorf("a fresh temp dir has mounts %v", mps)
	}
	for _, dir := range []string{"/proc", "/pro", "/sys", "/sys/fs", "/dev"} {
		mps, err := mountPoints(dir)
		if err != nil {
			t.Fatal(err)
		}
		checkUnder(t, dir, mps)
	}
	proc, _ := mountPoints("/proc")
	if len(proc) == 0 || proc[0] != "/proc" {
		t.Errorf("mountPoints(/proc) = %v, want /proc first (procfs is mounted there)", proc)
	}
}

// mountPoints("/") should list every mount ("at or below dir"); it builds the prefix
// dir+"/" = "//" and so lists only "/". Nothing calls it with "/" today.
func TestMountPointsRoot(t *testing.T) {
	mps, err := mountPoints("/")
	if err != nil {
		t.Fatal(err)
	}
	if !contains1(mps, "/proc") {
		t.Errorf(`mountPoints("/") = %v, want /proc among them`, mps)
	}
}

func contains1(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

const envMountsHelper = "BENCH_MOUNTS_TEST_HELPER"

// TestMountsUnmountUnder runs the mount checks in a child that entered fresh mount+net
// namespaces (EnterNamespace: / rprivate, private /run): nothing it mounts is ever seen
// outside, and everything goes with the namespace when the child exits.
func TestMountsUnmountUnder(t *testing.T) {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Skipf("no mount namespace to compare with: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMountsHelper$", "-test.v")
	cmd.Env = append(os.Environ(), envMountsHelper+"="+dir, envMountsHelper+"_PARENT_NS="+self,
		fmt.Sprintf("%s_PARENT_INSIDE=%v", envMountsHelper, InNamespace()))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 125 {
		t.Skipf("cannot enter a private mount namespace here:\n%s", out.String())
	}
	if err != nil || !strings.Contains(out.String(), "mount checks done") {
		t.Fatalf("helper: %v\n%s", err, out.String())
	}
	t.Log(out.String())
}

// TestMountsHelper is the program TestMountsUnmountUnder runs.
func TestMountsHelper(t *testing.T) {
	base := os.Getenv(envMountsHelper)
	if base == "" {
		t.Skip("helper for TestMountsUnmountUnder")
	}
	if err := EnterNamespace(); err != nil { // outside: never returns
		t.Fatal(err)
	}
	// Refuse to mount anything unless this is a namespace of the bench's own: a new one,
	// or the bench namespace the parent already ran in.
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil || !InNamespace() ||
		(self == os.Getenv(envMountsHelper+"_PARENT_NS") && os.Getenv(envMountsHelper+"_PARENT_INSIDE") != "true") {
		t.Fatalf("not in a private mount namespace (ns %s, err %v); mounting nothing", self, err)
	}

	p := func(rel string) string { return filepath.Join(base, rel) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tmpfs := func(rel string) {
		t.Helper()
		must(os.MkdirAll(p(rel), 0o755))
		must(unix.Mount("tmpfs", p(rel), "tmpfs", 0, "size=1m"))
	}
	// base/src is the source of a bind mount inside the tree: what a volume looks like.
	must(os.MkdirAll(p("src"), 0o755))
	must(os.WriteFile(p("src/keep"), []byte("x"), 0o644))
	tmpfs("a")
	tmpfs("a/b")
	tmpfs("a/b") // stacked on the same mount point
	must(os.MkdirAll(p("a/b/c"), 0o755))
	must(unix.Mount(p("src"), p("a/b/c"), "", unix.MS_BIND, ""))
	tmpfs("a/with space")
	tmpfs("ab") // a sibling whose name starts like a's

	list := func(rel string) []string {
		t.Helper()
		mps, err := mountPoints(p(rel))
		must(err)
		checkUnder(t, p(rel), mps)
		sort.Strings(mps)
		return mps
	}
	if got, want := list("a"), []string{p("a"), p("a/b"), p("a/b"), p("a/b/c"), p("a/with space")}; !reflect.DeepEqual(got, want) {
		t.Errorf("mountPoints(a) = %q, want %q", got, want)
	}
	if got, want := list("a/b"), []string{p("a/b"), p("a/b"), p("a/b/c")}; !reflect.DeepEqual(got, want) {
		t.Errorf("mountPoints(a/b) = %q, want %q", got, want)
	}

	must(unmountUnder(p("a") + "/"))
	if got := list("a"); len(got) != 0 {
		t.Errorf("after unmountUnder(a): %q still mounted", got)
	}
	if got := list("ab"); !reflect.DeepEqual(got, []string{p("ab")}) {
		t.Errorf("unmountUnder(a) touched its sibling: mountPoints(ab) = %q", got)
	}
	// Now removing the tree must not reach through to the bind mount's source.
	must(os.RemoveAll(p("a")))
	if _, err := os.Stat(p("src/keep")); err != nil {
		t.Errorf("bind source lost after unmountUnder and RemoveAll: %v", err)
	}
	if err := unmountUnder(p("no/such/dir")); err != nil {
		t.Errorf("unmountUnder of a missing dir: %v", err)
	}
	must(unmountUnder(p("ab")))
	if got := list(""); len(got) != 0 {
		t.Errorf("mounts left under the test dir: %q", got)
	}

	// removeNetnsPins works on /run/netns, which must be the namespace's private tmpfs.
	if run, _ := mountPoints("/run"); len(run) == 0 || run[0] != "/run" {
		t.Fatalf("/run is not a private mount here (%v); not touching /run/netns", run)
	}
	must(os.MkdirAll("/run/netns", 0o755))
	for _, name := range []string{"n1", "n2"} {
		pin := filepath.Join("/run/netns", name)
		must(os.WriteFile(pin, nil, 0o644))
		must(unix.Mount("/proc/self/ns/net", pin, "", unix.MS_BIND, "")) // what `ip netns add` does
	}
	must(os.WriteFile("/run/netns/unpinned", nil, 0o644))
	must(removeNetnsPins())
	if mps, _ := mountPoints("/run/netns"); len(mps) != 0 {
		t.Errorf("pins left mounted: %v", mps)
	}
	if ents, err := os.ReadDir("/run/netns"); err != nil || len(ents) != 0 {
		t.Errorf("/run/netns after removeNetnsPins: %v entries, err %v", len(ents), err)
	}
	must(os.Remove("/run/netns"))
	if err := removeNetnsPins(); err != nil {
		t.Errorf("removeNetnsPins without /run/netns: %v", err)
	}
	fmt.Println("mount checks done")
}
