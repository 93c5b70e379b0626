package planner

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// nameSuffixLen is the length of the random-looking part of a member name.
// 8 base-36 characters make collisions between seeds negligible.
const nameSuffixLen = 8

// maxNameLen keeps member names usable as pod hostnames (DNS-1123 labels).
const maxNameLen = 63

// NewMemberNames returns n member names "<cluster>-<suffix>" derived only
// from cluster, seed and the names to avoid, so the result is deterministic
// for a given input. Names in avoid are never returned, nor twice the same.
func NewMemberNames(cluster, seed string, n int, avoid map[string]bool) []string {
	prefix := namePrefix(cluster)
	used := make(map[string]bool, len(avoid)+n)
	for k := range avoid {
		used[k] = true
	}
	out := make([]string, 0, n)
	for counter := uint64(0); len(out) < n; counter++ {
		h := fnv.New64a()
		h.Write([]byte(cluster))
		h.Write([]byte{0})
		h.Write([]byte(seed))
		h.Write([]byte{0})
		h.Write([]byte(strconv.FormatUint(counter, 10)))
		s := strconv.FormatUint(h.Sum64(), 36)
		for len(s) < nameSuffixLen {
			s = "0" + s
		}
		name := prefix + "-" + s[len(s)-nameSuffixLen:]
		if used[name] {
			continue
		}
		used[name] = true
		out = append(out, name)
	}
	return out
}

// namePrefix is what every generated member name of cluster starts with, before "-".
func namePrefix(cluster string) string {
	prefix := strings.ToLower(cluster)
	if max := maxNameLen - nameSuffixLen - 1; len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-.")
	}
	return prefix
}

// IsMemberName reports whether name follows cluster's member naming
// ("<cluster>-<suffix>", at most 63 characters). A recorded name that does not is not
// one the controller could have chosen.
func IsMemberName(cluster, name string) bool {
	prefix := namePrefix(cluster) + "-"
	return len(name) > len(prefix) && len(name) <= maxNameLen && strings.HasPrefix(name, prefix)
}
