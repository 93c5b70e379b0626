// Package backupselect says which objects an EtcdBackup holds in its store and chooses
// one of them for a restore: the newest, the newest taken at or before a time, or the
// first that holds a revision. Choose is pure; Holdings and Pick read the store.
//
// Only objects the EtcdBackup wrote are ever considered: the periodic backups named from
// its key (<key>_v<revision>_<time>, the objects its retention looks at) and, for a
// one-shot backup, the key itself; an object whose metadata names another EtcdBackup is
// left out even if its name fits. Other objects under the same prefix never are.
package backupselect

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// Entry is one stored backup object.
type Entry struct {
	Key string
	// Revision is the etcd revision the snapshot holds.
	Revision int64
	// Time is when the snapshot was taken (UTC; whole seconds for periodic backups,
	// whose names carry it).
	Time time.Time
	// Size is the stored size in bytes; SHA256 the hex checksum of the stored bytes
	// (empty for an object without one, e.g. written by CoreOS's operator). Both are
	// known only once the object was described (see Describe).
	Size   int64
	SHA256 string
}

// Selector chooses one entry. The zero Selector chooses the newest.
type Selector struct {
	// NewestBefore, if not zero, admits only entries taken at or before it, and the
	// newest of them is chosen.
	NewestBefore time.Time
	// MinRevision, if above 0, admits only entries whose revision is at least it.
	// Alone, it chooses the entry with the lowest such revision: the first backup that
	// holds that revision, i.e. the one closest to it in time. With NewestBefore, the
	// newest admitted entry is chosen.
	MinRevision int64
}

// IsZero: the selector chooses the newest entry.
func (s Selector) IsZero() bool { return s.NewestBefore.IsZero() && s.MinRevision <= 0 }

// String describes the selector for messages.
func (s Selector) String() string {
	var parts []string
	if !s.NewestBefore.IsZero() {
		parts = append(parts, "taken at or before "+s.NewestBefore.UTC().Format(time.RFC3339))
	}
	if s.MinRevision > 0 {
		parts = append(parts, fmt.Sprintf("with revision at least %d", s.MinRevision))
	}
	if len(parts) == 0 {
		return "the newest"
	}
	return strings.Join(parts, " and ")
}

// ErrNoMatch: no entry satisfies the selector.
var ErrNoMatch = errors.New("no backup matches the selection")

// Choose returns the entry sel chooses among entries (in any order). Ties are broken
// the same way every time: the higher revision, then the later time, then the greater
// key wins.
func Choose(entries []Entry, sel Selector) (Entry, error) {
	var admitted []Entry
	for _, e := range entries {
		if !sel.NewestBefore.IsZero() && e.Time.After(sel.NewestBefore) {
			continue
		}
		if sel.MinRevision > 0 && e.Revision < sel.MinRevision {
			continue
		}
		admitted = append(admitted, e)
	}
	if len(admitted) == 0 {
		return Entry{}, noMatch(entries, sel)
	}
	if sel.MinRevision > 0 && sel.NewestBefore.IsZero() {
		return slices.MinFunc(admitted, byRevisionThenNewest), nil
	}
	SortNewestFirst(admitted)
	return admitted[0], nil
}

// SortNewestFirst orders entries by time, newest first, then by revision and key.
func SortNewestFirst(entries []Entry) {
	slices.SortFunc(entries, func(a, b Entry) int {
		return backup.NewestFirst(a.Time, a.Revision, a.Key, b.Time, b.Revision, b.Key)
	})
}

// byRevisionThenNewest orders by revision ascending; equal revisions (the same data)
// newest first.
func byRevisionThenNewest(a, b Entry) int {
	if c := cmp.Compare(a.Revision, b.Revision); c != 0 {
		return c
	}
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	return strings.Compare(b.Key, a.Key)
}

// noMatch explains an empty selection with what there is.
func noMatch(entries []Entry, sel Selector) error {
	if len(entries) == 0 {
		return fmt.Errorf("%w: there are no backups", ErrNoMatch)
	}
	oldest, newest := slices.MinFunc(entries, compareTime), slices.MaxFunc(entries, compareTime)
	lo := slices.MinFunc(entries, compareRevision).Revision
	hi := slices.MaxFunc(entries, compareRevision).Revision
	return fmt.Errorf("%w: none of the %d backups was %s (they were taken from %s to %s, revisions %d to %d)",
		ErrNoMatch, len(entries), sel, oldest.Time.UTC().Format(time.RFC3339), newest.Time.UTC().Format(time.RFC3339), lo, hi)
}

func compareTime(a, b Entry) int     { return a.Time.Compare(b.Time) }
func compareRevision(a, b Entry) int { return cmp.Compare(a.Revision, b.Revision) }
