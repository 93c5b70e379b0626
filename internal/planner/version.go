package planner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed etcd version: MAJOR.MINOR.PATCH with an optional
// pre-release ("3.7.0-rc.1"). Build metadata ("+...") is ignored.
type Version struct {
	Major, Minor, Patch int
	Pre                 string
}

// ParseVersion accepts "3.7.3", "v3.7.3", "3.7.0-rc.1".
func ParseVersion(s string) (Version, error) {
	orig := s
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	var v Version
	if i := strings.IndexByte(s, '-'); i >= 0 {
		v.Pre = s[i+1:]
		s = s[:i]
		if v.Pre == "" {
			return Version{}, fmt.Errorf("version %q: empty pre-release", orig)
		}
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR.PATCH", orig)
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("version %q: bad number %q", orig, p)
		}
		nums[i] = n
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	return v, nil
}

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// Compare orders versions (-1, 0, 1). A pre-release sorts before its
// release; pre-releases compare as strings, which is enough to tell
// "rc.1" from "rc.2" and never matters for the skew rules.
func (v Version) Compare(o Version) int {
	for _, d := range [...]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	switch {
	case v.Pre == o.Pre:
		return 0
	case v.Pre == "":
		return 1
	case o.Pre == "":
		return -1
	case v.Pre < o.Pre:
		return -1
	default:
		return 1
	}
}

// CheckSkew says whether a member running cur may be restarted on to.
// etcd supports a rolling restart only within a minor version (either
// direction: patch releases share the storage format) or one minor up, and one
// minor up only from the patch release etcd's upgrade guide names (minPatchBeforeMinor).
// Minor downgrades need etcd's downgrade API, a skipped minor is untested
// by etcd and refused by it, and a major change is not a rolling upgrade.
func CheckSkew(cur, to Version) error {
	switch {
	case cur.Major != to.Major:
		return fmt.Errorf("major version change %s -> %s is not supported", cur, to)
	case to.Minor < cur.Minor:
		if err := checkDowngrade(cur, to); err != nil { // downgrade.go
			return err
		}
		return fmt.Errorf("downgrade %s -> %s goes through etcd's downgrade procedure, not a plain restart", cur, to)
	case to.Minor > cur.Minor+1:
		return fmt.Errorf("upgrade %s -> %s skips a minor version; upgrade to %d.%d.x first", cur, to, cur.Major, cur.Minor+1)
	case to.Minor == cur.Minor+1:
		if min, ok := minPatchBeforeMinor[[2]int{cur.Major, cur.Minor}]; ok && (cur.Patch < min || cur.Patch == min && cur.Pre != "") {
			return fmt.Errorf("upgrade %s -> %s needs every member on %d.%d.%d or later first (etcd's upgrade guide for %d.%d); set spec.version to %d.%d.%d or a later %d.%d patch, then to %s: %w",
				cur, to, cur.Major, cur.Minor, min, to.Major, to.Minor, cur.Major, cur.Minor, min, cur.Major, cur.Minor, to, errBelowMinPatch)
		}
	}
	return nil
}

// errBelowMinPatch marks CheckSkew's refusal of a minor step from a patch older than
// minPatchBeforeMinor names.
var errBelowMinPatch = errors.New("below the minimum patch for this step")

// minPatchBeforeMinor is, per minor version, the oldest patch release etcd's upgrade
// guide allows a rolling upgrade to the next minor from: 3.5.32 before 3.6 (3.5.24–3.5.26
// fix upgrade blockers such as the "too many learner members" failure; 3.5.32 adds
// the v2store checks 3.6 needs), 3.6.11 before 3.7 (earlier 3.6 patches may not be
// compatible with a rolling upgrade to 3.7). A minor without an entry has no such rule.
var minPatchBeforeMinor = map[[2]int]int{
	{3, 5}: 32,
	{3, 6}: 11,
}

// MinSupportedVersion is the oldest etcd the operator runs. Older releases are out of
// upstream support and lack the local-only health check the members' liveness probe
// relies on (a probe that fails when quorum is lost would restart every member at once).
const MinSupportedVersion = "3.5.0"

// CheckSupported says whether the operator can run etcd version v. It refuses versions
// older than MinSupportedVersion; a version that does not parse is refused too.
func CheckSupported(v string) error {
	got, err := ParseVersion(v)
	if err != nil {
		return err
	}
	min, _ := ParseVersion(MinSupportedVersion)
	if got.Major < min.Major || got.Major == min.Major && got.Minor < min.Minor {
		return fmt.Errorf("etcd %s is not supported: the oldest version this operator runs is %s; set spec.version to %d.%d.x or later",
			got, MinSupportedVersion, min.Major, min.Minor)
	}
	return nil
}
