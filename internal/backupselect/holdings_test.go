package backupselect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// store holds three periodic backups of "c/k" written by EtcdBackup ns/b, plus objects
// that must never be taken for its own: another backup's under the same name pattern,
// objects whose metadata names no EtcdBackup, an unrelated object under the prefix, a periodic backup of another key that shares the
// prefix, and an unfinished object (no checksum yet).
func store(t *testing.T) (backup.Store, string) {
	t.Helper()
	root := t.TempDir()
	s, err := backup.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ours := map[string]string{MetaBackupNamespace: "ns", MetaBackupName: "b"}
	put := func(key, data string, md map[string]string) {
		if _, err := s.Put(ctx, key, strings.NewReader(data), backup.PutOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	put("c/k_v100_2026-12-01-10:00:00", "one", ours)
	put("c/k_v200_2026-12-01-11:00:00", "two", ours)
	put("c/k_v300_2026-12-01-12:00:00", "three", ours)
	put("c/k_v999_2026-12-01-13:00:00", "theirs", map[string]string{MetaBackupNamespace: "other", MetaBackupName: "b"})
	put("c/k.notes", "unrelated", nil)
	// Named like the newest periodic backup, but its metadata names no EtcdBackup (an
	// older writer's, CoreOS's, or dropped there to be restored instead): never taken.
	put("c/k_v998_2026-12-01-13:30:00", "anonymous", nil)
	put("c/k_v997_2026-12-01-13:40:00", "half-named", map[string]string{MetaBackupName: "b"})
	put("c/k2_v500_2026-12-01-14:00:00", "another key", ours)
	// Unfinished: in S3 the data object is there before its checksum object.
	if err := os.WriteFile(filepath.Join(root, "c/k_v400_2026-12-01-12:30:00"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	return unfinished{s, "c/k_v400_2026-12-01-12:30:00"}, root
}

// unfinished answers for one key as the S3 store does while a backup is being written.
type unfinished struct {
	*backup.FS
	key string
}

func (u unfinished) Get(ctx context.Context, key string) (io.ReadCloser, backup.Object, error) {
	if key == u.key {
		return nil, backup.Object{}, fmt.Errorf("%s: %w", key, backup.ErrNoChecksum)
	}
	return u.FS.Get(ctx, key)
}

func TestNewestListsOnlyTheBackupsOwnObjects(t *testing.T) {
	s, _ := store(t)
	src := Source{Store: s, Key: "c/k", Namespace: "ns", Name: "b"}
	got, err := Newest(context.Background(), src, 10)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key)
		if len(e.SHA256) != 64 || e.Size == 0 {
			t.Errorf("%s not described: %+v", e.Key, e)
		}
	}
	want := "c/k_v300_2026-12-01-12:00:00 c/k_v200_2026-12-01-11:00:00 c/k_v100_2026-12-01-10:00:00"
	if strings.Join(keys, " ") != want {
		t.Fatalf("got %v\nwant %s", keys, want)
	}
	if got[0].Revision != 300 || got[0].Time.Format("15:04:05") != "12:00:00" {
		t.Errorf("newest entry %+v", got[0])
	}

	bounded, err := Newest(context.Background(), src, 2)
	if err != nil || len(bounded) != 2 || bounded[1].Key != "c/k_v200_2026-12-01-11:00:00" {
		t.Errorf("bounded to 2: %+v %v", bounded, err)
	}
}

// A one-shot backup's object is its key; its revision comes from its metadata.
func TestOneShotObject(t *testing.T) {
	s, err := backup.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]string{MetaBackupNamespace: "ns", MetaBackupName: "once", MetaRevision: "42"}
	if _, err := s.Put(context.Background(), "once.db", strings.NewReader("x"), backup.PutOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	got, err := Newest(context.Background(), Source{Store: s, Key: "once.db", Namespace: "ns", Name: "once"}, 10)
	if err != nil || len(got) != 1 || got[0].Key != "once.db" || got[0].Revision != 42 || got[0].Time.IsZero() {
		t.Fatalf("got %+v %v", got, err)
	}
	if got, err := Newest(context.Background(), Source{Store: s, Key: "once.db", Namespace: "ns", Name: "someone-else"}, 10); err != nil || len(got) != 0 {
		t.Errorf("another backup's one-shot object listed: %+v %v", got, err)
	}
}

func TestPick(t *testing.T) {
	s, _ := store(t)
	src := Source{Store: s, Key: "c/k", Namespace: "ns", Name: "b"}
	ctx := context.Background()
	// The newest by name is another backup's, then an unfinished one: both skipped.
	e, err := Pick(ctx, src, Selector{})
	if err != nil || e.Key != "c/k_v300_2026-12-01-12:00:00" || e.SHA256 == "" {
		t.Fatalf("newest: %+v %v", e, err)
	}
	e, err = Pick(ctx, src, Selector{NewestBefore: at("2026-12-01T11:30:00Z")})
	if err != nil || e.Key != "c/k_v200_2026-12-01-11:00:00" {
		t.Fatalf("newest before 11:30: %+v %v", e, err)
	}
	e, err = Pick(ctx, src, Selector{MinRevision: 301})
	if !errors.Is(err, ErrNoMatch) {
		t.Fatalf("min revision 301 (only another backup's object and an unfinished one hold it): %+v %v", e, err)
	}
}

// DescribeOwn admits only the backup's own complete objects, without an error for the rest.
func TestDescribeOwn(t *testing.T) {
	s, _ := store(t)
	src := Source{Store: s, Key: "c/k", Namespace: "ns", Name: "b"}
	for key, want := range map[string]bool{
		"c/k_v300_2026-12-01-12:00:00": true,
		"c/k_v999_2026-12-01-13:00:00": false, // another backup's
		"c/k_v998_2026-12-01-13:30:00": false, // names no EtcdBackup
		"c/k_v997_2026-12-01-13:40:00": false, // names no namespace
		"c/k_v400_2026-12-01-12:30:00": false, // unfinished
		"c/k_v1_2026-11-01-12:30:00":   false, // absent
	} {
		e, ok, err := DescribeOwn(context.Background(), src, key)
		if err != nil || ok != want || ok && (e.Key != key || e.SHA256 == "") {
			t.Errorf("%s: %+v %v %v, want ok=%v", key, e, ok, err, want)
		}
	}
}
