package backup_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// With an owner, retention counts and deletes only objects whose metadata names that
// owner: another EtcdBackup's objects under the same names and objects naming nobody
// (CoreOS's, an older writer's, or put there by hand) are neither counted nor deleted.
func TestRetentionOwner(t *testing.T) {
	forEachStore(t, func(t *testing.T, s backup.Store) {
		ctx := context.Background()
		base := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
		ours := map[string]string{"etcd-backup-namespace": "a", "etcd-backup-name": "b"}
		theirs := map[string]string{"etcd-backup-namespace": "a", "etcd-backup-name": "other"}
		put := func(rev int64, md map[string]string) string {
			t.Helper()
			k := backup.PeriodicKey("etcd/c", rev, base.Add(time.Duration(rev)*time.Minute))
			if _, err := s.Put(ctx, k, strings.NewReader(k), backup.PutOptions{Metadata: md}); err != nil {
				t.Fatal(err)
			}
			return k
		}
		own1, foreign2, anon3, own4, own5, foreign6 := put(1, ours), put(2, theirs), put(3, nil), put(4, ours), put(5, ours), put(6, theirs)
		deleted, err := backup.Retain(ctx, s, "etcd/c", backup.Retention{Keep: 2, Owner: ours})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{own1}; !slices.Equal(deleted, want) {
			t.Errorf("deleted %v, want only the oldest of our own three %v", deleted, want)
		}
		for _, k := range []string{foreign2, anon3, own4, own5, foreign6} {
			if _, _, err := readAll(t, s, k); err != nil {
				t.Errorf("%s should survive retention: %v", k, err)
			}
		}
		// Even by age, an object retention cannot attribute is never deleted.
		deleted, err = backup.Retain(ctx, s, "etcd/c", backup.Retention{MaxAge: time.Second, Now: base.Add(time.Hour), Owner: ours})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{own4}; !slices.Equal(deleted, want) {
			t.Errorf("by age deleted %v, want %v (the newest own one kept, nobody else's touched)", deleted, want)
		}
	})
}

// getFails is a store whose Get of one key fails as an object retention cannot read
// (another encryption key, bound elsewhere, too large) does.
type getFails struct {
	backup.Store
	key string
}

func (s getFails) Get(ctx context.Context, key string) (io.ReadCloser, backup.Object, error) {
	if key == s.key {
		return nil, backup.Object{}, errors.New("unreadable object")
	}
	return s.Store.Get(ctx, key)
}

// One object under the prefix that cannot be read does not stop the pruning of the
// EtcdBackup's own objects (the bucket would grow without bound), and is not deleted.
func TestRetentionSkipsUnreadableObjects(t *testing.T) {
	forEachStore(t, func(t *testing.T, s backup.Store) {
		ctx := context.Background()
		base := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
		ours := map[string]string{"etcd-backup-namespace": "a", "etcd-backup-name": "b"}
		put := func(rev int64) string {
			t.Helper()
			k := backup.PeriodicKey("etcd/c", rev, base.Add(time.Duration(rev)*time.Minute))
			if _, err := s.Put(ctx, k, strings.NewReader(k), backup.PutOptions{Metadata: ours}); err != nil {
				t.Fatal(err)
			}
			return k
		}
		own1, bad2, own3, own4 := put(1), put(2), put(3), put(4)
		deleted, err := backup.Retain(ctx, getFails{s, bad2}, "etcd/c", backup.Retention{Keep: 2, Owner: ours})
		if err != nil {
			t.Fatalf("retention stopped at an unreadable object: %v", err)
		}
		if want := []string{own1}; !slices.Equal(deleted, want) {
			t.Errorf("deleted %v, want %v", deleted, want)
		}
		for _, k := range []string{bad2, own3, own4} {
			if _, _, err := readAll(t, s, k); err != nil {
				t.Errorf("%s should survive retention: %v", k, err)
			}
		}
	})
}
