package restore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// bbolt's on-disk layout, as far as the mutations below need it (facts of the format):
// every page starts with a 16-byte header (id u64, flags u16, count u16, overflow u32);
// pages 0 and 1 are meta pages whose body (at 16) holds magic u32, version u32, page size
// u32, flags u32, the root bucket (root page u64, sequence u64), the freelist page u64,
// the high-water page u64, the transaction id u64 and an FNV-64a checksum u64 of the
// meta body before it; branch elements are 16 bytes (pos u32, ksize u32, page u64) and
// leaf elements 16 bytes (flags u32, pos u32, ksize u32, vsize u32), both right after
// the header.
const (
	boltHeader       = 16
	boltMetaRoot     = boltHeader + 16
	boltMetaFreelist = boltHeader + 32
	boltMetaPgid     = boltHeader + 40
	boltMetaChecksum = boltHeader + 56
	boltElement      = 16
)

// mutateBolt applies structured mutations to a snapshot (a bbolt database followed by
// etcd's SHA-256): each 5-byte op of ops picks a page, a field of its header, of one of
// its elements or of its meta, and a value, or flips a byte. Meta checksums and etcd's
// integrity hash are recomputed afterwards, so the damage reaches bbolt's and etcd's
// parsers instead of stopping at a checksum.
func mutateBolt(snap, ops []byte) []byte {
	db := bytes.Clone(snap[:len(snap)-sha256.Size])
	pageSize := int(binary.LittleEndian.Uint32(db[boltHeader+8:]))
	if pageSize < 512 || pageSize > len(db) || len(db)%pageSize != 0 {
		pageSize = 4096
	}
	pages := len(db) / pageSize
	metaTouched := [2]bool{}
	for ; len(ops) >= 5; ops = ops[5:] {
		pg, field, v16 := int(ops[0])%pages, ops[1], binary.LittleEndian.Uint16(ops[2:])
		v := uint64(v16) | uint64(ops[4])<<16
		base := pg * pageSize
		page := db[base : base+pageSize]
		elem := boltHeader + int(ops[4]%16)*boltElement
		switch field % 12 {
		case 0:
			binary.LittleEndian.PutUint16(page[8:], v16) // flags
		case 1:
			binary.LittleEndian.PutUint16(page[10:], v16) // count
		case 2:
			binary.LittleEndian.PutUint32(page[12:], uint32(v)) // overflow
		case 3:
			binary.LittleEndian.PutUint64(page[0:], v) // id
		case 4:
			binary.LittleEndian.PutUint32(page[elem:], uint32(v16)) // branch pos / leaf flags
		case 5:
			binary.LittleEndian.PutUint32(page[elem+4:], uint32(v16)) // branch ksize / leaf pos
		case 6:
			binary.LittleEndian.PutUint32(page[elem+8:], uint32(v16)) // branch page (low) / leaf ksize
		case 7:
			binary.LittleEndian.PutUint32(page[elem+12:], uint32(v)) // branch page (high) / leaf vsize
		case 8, 9, 10:
			m := pg % 2
			off := []int{boltMetaRoot, boltMetaFreelist, boltMetaPgid}[field%12-8]
			binary.LittleEndian.PutUint64(db[m*pageSize+off:], v)
			metaTouched[m] = true
		case 11:
			db[base+int(v)%pageSize] ^= ops[3] | 1 // a flipped byte anywhere in the page
		}
	}
	for m, touched := range metaTouched {
		if touched {
			h := fnv.New64a()
			h.Write(db[m*pageSize+boltHeader : m*pageSize+boltMetaChecksum])
			binary.LittleEndian.PutUint64(db[m*pageSize+boltMetaChecksum:], h.Sum64())
		}
	}
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

// FuzzCheckSnapshot runs the snapshot check pod's checks (CheckSnapshot: the stored
// checksum, etcd's integrity hash, bbolt's consistency check, every key read) on
// structured bbolt mutations of a real small snapshot stored as a backup, each in a
// process of its own as the pod runs it: it must end within a minute with a result, or
// die without one, never pass while dying, never hang. The operator turns a death into
// VerificationFailed; in the operator's own process the same input would have killed
// the operator: bbolt reads pages past its memory map on goroutines of its own, where
// neither recover nor debug.SetPanicOnFault reaches (seed 1 below). The seeds run as a
// unit test.
func FuzzCheckSnapshot(f *testing.F) {
	snap := etcdtest.Snapshot(f, 20)
	for _, seed := range [][]byte{
		nil,                                  // the snapshot itself: passes
		{0, 8, 0xff, 0xff, 0},                // meta 0's root page beyond the file: bbolt faults
		{1, 8, 0xff, 0xff, 0},                // meta 1's too
		{2, 1, 0xff, 0xff, 0},                // a page claims 65535 elements
		{3, 2, 0xff, 0xff, 0xff},             // a page claims a huge overflow
		{2, 0, 0x10, 0x00, 0},                // a page's flags say meta
		{2, 5, 0xf0, 0xff, 0},                // an element's position beyond its page
		{4, 7, 0xff, 0xff, 0xff},             // a value size far beyond the database
		{0, 9, 0x02, 0x00, 0},                // the freelist is page 2
		{0, 10, 0x01, 0x00, 0},               // the high-water mark below the pages in use
		{5, 11, 0x20, 0x07, 0},               // a flipped byte
		{0, 8, 0x02, 0, 0, 1, 8, 0x02, 0, 0}, // both metas point the root at the same page
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		dir, scratch := t.TempDir(), t.TempDir()
		store, err := backup.NewFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Put(context.Background(), "snap.db", bytes.NewReader(mutateBolt(snap, ops)), backup.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		// A hang detector, not a timing assert: a 20-key database is checked in
		// milliseconds; a minute means the check does not end.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCheckSnapshotChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), checkChildEnv+"="+dir, checkChildScratchEnv+"="+scratch)
		out, runErr := cmd.Output()
		if ctx.Err() != nil {
			t.Fatalf("the check of mutation %x did not end within a minute", ops)
		}
		res, found := childResult(out)
		switch {
		case !found && runErr == nil:
			t.Fatalf("mutation %x: the check exited cleanly without a result", ops)
		case !found:
			// Died without a result (a fault in bbolt's own goroutines): the operator
			// reports VerificationFailed; it must not be the unmutated snapshot.
			if len(ops) == 0 {
				t.Fatalf("the unmutated snapshot's check died: %v", runErr)
			}
			t.Logf("mutation %x: the check process died without a result (%v): contained by the pod", ops, runErr)
		case len(ops) == 0 && res.Reason != "":
			t.Fatalf("the unmutated snapshot failed its check: %s: %s", res.Reason, res.Error)
		case (res.Reason == "") == (res.Error != "") || res.Reason == "" && len(res.SHA256) != 64:
			t.Fatalf("mutation %x: incoherent result %+v", ops, res)
		}
	})
}

// checkChildEnv names the store directory TestCheckSnapshotChild checks snap.db of;
// checkChildScratchEnv the directory it downloads into. Both are the parent's t.TempDir:
// a child that dies of a fault (the point of the fuzz test) runs no clean-up of its own,
// so a t.TempDir of the child's would stay in /tmp.
const (
	checkChildEnv        = "ETCD_OPERATOR_FUZZ_CHECK_DIR"
	checkChildScratchEnv = "ETCD_OPERATOR_FUZZ_CHECK_SCRATCH"
)

const childResultPrefix = "CHECK-RESULT "

// childCheckTimeout bounds the child's check, as --timeout bounds a check pod's, well
// inside the parent's minute.
const childCheckTimeout = 30 * time.Second

// TestCheckSnapshotChild is FuzzCheckSnapshot's child process (skipped otherwise): it
// checks one stored object and prints the result on a line of its own.
func TestCheckSnapshotChild(t *testing.T) {
	dir := os.Getenv(checkChildEnv)
	if dir == "" {
		t.Skip("run by FuzzCheckSnapshot")
	}
	store, err := backup.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Within the parent's minute: a check that does not end must still report.
	ctx, cancel := context.WithTimeout(context.Background(), childCheckTimeout)
	defer cancel()
	res := CheckSnapshot(ctx, store, "snap.db", os.Getenv(checkChildScratchEnv))
	fmt.Printf("\n%s%s\n", childResultPrefix, res.Encode())
}

// childResult finds the child's result line.
func childResult(out []byte) (CheckResult, bool) {
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, childResultPrefix); ok {
			r, err := ParseCheckResult(rest)
			return r, err == nil
		}
	}
	return CheckResult{}, false
}
