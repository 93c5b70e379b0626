package backup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TimeFormat is the timestamp layout of periodic backup names, as in CoreOS's operator.
const TimeFormat = "2006-01-02-15:04:05"

// PeriodicKey names a periodic backup: "<key>_v<revision>_<2006-01-02-15:04:05>" (UTC).
func PeriodicKey(key string, revision int64, at time.Time) string {
	return fmt.Sprintf("%s_v%d_%s", key, revision, at.UTC().Format(TimeFormat))
}

// ParsePeriodicKey reports whether name is a periodic backup of key and returns its
// revision and time. Anything else (another key, a one-shot backup, a stray object)
// is not one.
func ParsePeriodicKey(key, name string) (revision int64, at time.Time, ok bool) {
	rest, found := strings.CutPrefix(name, key+"_v")
	if !found {
		return 0, time.Time{}, false
	}
	revStr, ts, found := strings.Cut(rest, "_")
	if !found {
		return 0, time.Time{}, false
	}
	rev, err := strconv.ParseInt(revStr, 10, 64)
	if err != nil || rev < 0 || strconv.FormatInt(rev, 10) != revStr {
		return 0, time.Time{}, false
	}
	t, err := time.Parse(TimeFormat, ts)
	if err != nil {
		return 0, time.Time{}, false
	}
	return rev, t, true
}

// NewestFirst compares two backups, each by its time, revision and key, for a sort
// that puts the newest first: the later time, then the higher revision, then the
// greater key (so that equal ones still sort the same every time).
func NewestFirst(aAt time.Time, aRev int64, aKey string, bAt time.Time, bRev int64, bKey string) int {
	if c := bAt.Compare(aAt); c != 0 {
		return c
	}
	if c := cmp.Compare(bRev, aRev); c != 0 {
		return c
	}
	return strings.Compare(bKey, aKey)
}

// Periodic lists the periodic backups of key in the store, newest first: by the time in
// the name, then by revision.
func Periodic(ctx context.Context, s Store, key string) ([]Object, error) {
	objs, err := s.List(ctx, key+"_v")
	if err != nil {
		return nil, err
	}
	type named struct {
		Object
		rev int64
		at  time.Time
	}
	var ns []named
	for _, o := range objs {
		if rev, at, ok := ParsePeriodicKey(key, o.Key); ok {
			ns = append(ns, named{o, rev, at})
		}
	}
	slices.SortFunc(ns, func(a, b named) int { return NewestFirst(a.at, a.rev, a.Key, b.at, b.rev, b.Key) })
	out := make([]Object, len(ns))
	for i, n := range ns {
		out[i] = n.Object
	}
	return out, nil
}

// Latest returns the newest periodic backup of key.
func Latest(ctx context.Context, s Store, key string) (Object, error) {
	objs, err := Periodic(ctx, s, key)
	if err != nil {
		return Object{}, err
	}
	if len(objs) == 0 {
		return Object{}, fmt.Errorf("%s: no periodic backup of %q: %w", s, key, ErrNotFound)
	}
	return objs[0], nil
}

// Retention says which periodic backups of a key to keep.
type Retention struct {
	// Keep is how many of the newest to keep (0: any number).
	Keep int
	// MaxAge deletes those whose name's time is older than Now minus MaxAge (0: any age).
	MaxAge time.Duration
	Now    time.Time
	// Owner, when set, is metadata an object must carry (every key with the same value)
	// to be counted or deleted: objects another writer put under the same names, and
	// objects whose metadata names no owner (CoreOS's, or written by hand), are neither
	// kept in the count nor ever deleted, since retention cannot attribute them. Reading
	// it costs one metadata request per periodic object.
	Owner map[string]string
}

// ownedBy says whether obj's metadata carries every owner entry.
func ownedBy(obj Object, owner map[string]string) bool {
	for k, v := range owner {
		if obj.Metadata[k] != v {
			return false
		}
	}
	return true
}

// owned keeps the objects whose stored metadata carries owner, in order. List does not
// return an object's metadata, so each one's is read (its data is not). An object that
// cannot be read (encrypted with another key, bound to another EtcdBackup, too large,
// failing) is not retention's to judge: it is skipped, never deleted, and the others
// are still pruned.
func owned(ctx context.Context, s Store, objs []Object, owner map[string]string) ([]Object, error) {
	if len(owner) == 0 {
		return objs, nil
	}
	var out []Object
	for _, o := range objs {
		rc, full, err := s.Get(ctx, o.Key)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue // deleted meanwhile, unfinished or unreadable: not retention's to judge
		}
		rc.Close() // only the metadata is wanted
		if ownedBy(full, owner) {
			out = append(out, o)
		}
	}
	return out, nil
}

// Retain deletes the periodic backups of key that r does not keep and returns the
// deleted keys. Only objects named exactly like periodic backups of key (and, with
// r.Owner, carrying that metadata) are ever considered, and the newest of them is always kept, however old: a backup that is too
// old is still better than none.
func Retain(ctx context.Context, s Store, key string, r Retention) ([]string, error) {
	if r.Keep <= 0 && r.MaxAge <= 0 {
		return nil, nil
	}
	objs, err := Periodic(ctx, s, key)
	if err != nil || len(objs) <= 1 {
		return nil, err
	}
	if objs, err = owned(ctx, s, objs, r.Owner); err != nil || len(objs) <= 1 {
		return nil, err
	}
	var deleted []string
	var errs []error
	for i, o := range objs {
		if i == 0 {
			continue // the newest
		}
		tooMany := r.Keep > 0 && i >= r.Keep
		_, at, _ := ParsePeriodicKey(key, o.Key)
		tooOld := r.MaxAge > 0 && at.Before(r.Now.Add(-r.MaxAge))
		if !tooMany && !tooOld {
			continue
		}
		if err := s.Delete(ctx, o.Key); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, o.Key)
	}
	return deleted, errors.Join(errs...)
}
