package etcdadmin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
	protov2 "google.golang.org/protobuf/proto"

	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// fakeSnapshotRPC replays messages, then ends with end (io.EOF for a clean end).
type fakeSnapshotRPC struct {
	msgs []*pb.SnapshotResponse
	end  error
}

func (f *fakeSnapshotRPC) RecvMsg(m any) error {
	if len(f.msgs) == 0 {
		return f.end
	}
	b, err := protov2.Marshal(f.msgs[0])
	if err != nil {
		return err
	}
	f.msgs = f.msgs[1:]
	return decodeSnapshotResponse(b, m.(*pb.SnapshotResponse))
}

// messages splits db into etcd's snapshot messages (remaining_bytes counting down to 0)
// followed by the hash message.
func messages(db []byte, chunk int, hash []byte) []*pb.SnapshotResponse {
	var out []*pb.SnapshotResponse
	for sent := 0; sent < len(db); {
		n := min(chunk, len(db)-sent)
		sent += n
		out = append(out, &pb.SnapshotResponse{Blob: db[sent-n : sent], RemainingBytes: uint64(len(db) - sent)})
	}
	return append(out, &pb.SnapshotResponse{Blob: hash})
}

// The stream's size comes from the first message, and a stream that is shorter or
// longer than announced fails the read instead of ending cleanly.
func TestSnapshotStreamLength(t *testing.T) {
	db := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes
	hash := bytes.Repeat([]byte{0xaa}, snapshotHashSize)
	want := append(append([]byte(nil), db...), hash...)
	broken := errors.New("connection reset")
	for _, tc := range []struct {
		name    string
		msgs    []*pb.SnapshotResponse
		end     error
		wantErr error // nil: reads want
	}{
		{name: "whole", msgs: messages(db, 4096, hash), end: io.EOF},
		{name: "one message", msgs: messages(db, len(db), hash), end: io.EOF},
		{name: "hash missing", msgs: messages(db, 4096, nil)[:4], end: io.EOF, wantErr: errSnapshotLength},
		{name: "a message lost", msgs: append(messages(db, 4096, hash)[:2], messages(db, 4096, hash)[3:]...), end: io.EOF, wantErr: errSnapshotLength},
		{name: "bytes after the hash", msgs: append(messages(db, 4096, hash), &pb.SnapshotResponse{Blob: []byte("x")}), end: io.EOF, wantErr: errSnapshotLength},
		{name: "broken", msgs: messages(db, 4096, hash)[:2], end: broken, wantErr: broken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rpc := &fakeSnapshotRPC{msgs: tc.msgs[1:], end: tc.end}
			s, err := newSnapshotStream(rpc, tc.msgs[0])
			if err != nil {
				t.Fatal(err)
			}
			if s.size != int64(len(want)) {
				t.Fatalf("size %d, want %d", s.size, len(want))
			}
			got, err := io.ReadAll(s)
			if tc.wantErr == nil {
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("read %d bytes, %v; want the %d bytes of the stream", len(got), err, len(want))
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("read %d bytes, error %v; want %v", len(got), err, tc.wantErr)
			}
			if len(got) > len(want) {
				t.Fatalf("read %d bytes, more than the %d announced", len(got), len(want))
			}
		})
	}
}

// Against a real member: the size Snapshot announces is the number of bytes read, and
// they end with etcd's hash of the database.
func TestSnapshotSizeIsWhatIsRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	snap := openSnapshot(t, ctx, filledMember(t, ctx, 40, 100<<10))
	got, err := io.ReadAll(snap)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != snap.Size || snap.Size < 4<<20 {
		t.Fatalf("read %d bytes, Size says %d (want equal, over 4 MiB)", len(got), snap.Size)
	}
	// Two snapshots of one member need not be equal bytes (the backend commits in
	// between), so the check is etcd's own: the trailing hash covers the database.
	db, trailer := got[:len(got)-snapshotHashSize], got[len(got)-snapshotHashSize:]
	if sum := sha256.Sum256(db); !bytes.Equal(sum[:], trailer) {
		t.Fatal("the stream's last 32 bytes are not the SHA-256 of the database before them")
	}
}

// filledMember starts a one-member cluster holding keys values of valueBytes each and
// returns its endpoints.
func filledMember(t *testing.T, ctx context.Context, keys, valueBytes int) []string {
	t.Helper()
	c := etcdtest.StartCluster(t, 1, "")
	cli := c.Client(t)
	for i := range keys {
		if _, err := cli.Put(ctx, fmt.Sprintf("/k/%d", i), strings.Repeat("v", valueBytes)); err != nil {
			t.Fatal(err)
		}
	}
	return c.Endpoints()
}

// openSnapshot opens a snapshot of the member at eps through an Admin of its own; both
// are closed when the test ends.
func openSnapshot(t *testing.T, ctx context.Context, eps []string) *Snapshot {
	t.Helper()
	a, err := New(Config{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	snap, err := a.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return snap
}

// decodeSnapshotResponse decodes what proto does, also a header and fields it does not
// know, and a message decoded into a reused one carries nothing of the previous one.
func TestDecodeSnapshotResponse(t *testing.T) {
	var m pb.SnapshotResponse
	for _, want := range []*pb.SnapshotResponse{
		{Blob: bytes.Repeat([]byte{7}, 32<<10), RemainingBytes: 1 << 40, Version: "3.7.0"},
		{Header: &pb.ResponseHeader{ClusterId: 1, MemberId: 2, Revision: 3, RaftTerm: 4}, Blob: []byte("short")},
		{RemainingBytes: 0, Blob: bytes.Repeat([]byte{0xaa}, snapshotHashSize)},
		{},
	} {
		b, err := protov2.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeSnapshotResponse(b, &m); err != nil {
			t.Fatal(err)
		}
		if !protov2.Equal(&m, want) {
			t.Errorf("decoded %v, want %v", &m, want)
		}
	}
	// An unknown field (number 9, bytes) between known ones is skipped.
	b, _ := protov2.Marshal(&pb.SnapshotResponse{RemainingBytes: 5})
	b = protowire.AppendTag(b, 9, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("future"))
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("blob"))
	if err := decodeSnapshotResponse(b, &m); err != nil || m.RemainingBytes != 5 || string(m.Blob) != "blob" {
		t.Errorf("with an unknown field: %v, %v", &m, err)
	}
	if err := decodeSnapshotResponse(b[:len(b)-2], &m); err == nil {
		t.Error("a truncated message decoded without error")
	}
}
