package etcdadmin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// The snapshot is read from etcd's Maintenance.Snapshot stream directly rather than
// through clientv3's wrapper, which hands every message to a goroutine that writes it
// into a pipe: here Read copies each message's blob straight into the caller's buffer
// on the caller's goroutine. The first message also says how much follows
// (remaining_bytes), so the size of the whole stream is known before the upload starts
// (see Snapshot.Size).

// snapshotHashSize is the SHA-256 etcd sends after the database, as the stream's last
// message (a restore checks it).
const snapshotHashSize = 32

// errSnapshotLength reports a stream that did not carry the bytes its first message
// announced.
var errSnapshotLength = errors.New("snapshot stream length differs from the size etcd announced")

// openSnapshotStream starts the RPC on c and reads its first message.
func openSnapshotStream(ctx context.Context, c *clientv3.Client) (*snapshotStream, string, error) {
	// WaitForReady: the connection was just dialled and may still be connecting;
	// the caller bounds the wait.
	ss, err := pb.NewMaintenanceClient(c.ActiveConnection()).Snapshot(ctx, &pb.SnapshotRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return nil, "", err
	}
	first, err := ss.Recv()
	if err != nil {
		return nil, "", err
	}
	s, err := newSnapshotStream(ss, first)
	if err != nil {
		return nil, "", err
	}
	return s, first.GetVersion(), nil
}

// snapshotReceiver is the part of the Snapshot RPC's client stream Read uses: RecvMsg,
// so every message is received into the same SnapshotResponse (see
// decodeSnapshotResponse).
type snapshotReceiver interface {
	RecvMsg(m any) error
}

// snapshotStream reads the blobs of a snapshot stream as one byte stream: the database,
// then etcd's SHA-256 of it. It fails the read instead of returning io.EOF when the
// stream ends before, or runs past, the size the first message announced.
type snapshotStream struct {
	rpc  snapshotReceiver
	msg  pb.SnapshotResponse // the message received last
	blob []byte              // the unread rest of msg's blob
	size int64               // the whole stream: database plus hash
	read int64
	err  error // sticky: the stream's end or failure

	closeOnce sync.Once
	close     func() // ends the RPC and its connection; set by the opener
}

func newSnapshotStream(rpc snapshotReceiver, first *pb.SnapshotResponse) (*snapshotStream, error) {
	rest := first.GetRemainingBytes()
	if rest > math.MaxInt64/2 {
		return nil, fmt.Errorf("snapshot: etcd announced %d remaining bytes", rest)
	}
	return &snapshotStream{
		rpc: rpc, blob: first.GetBlob(),
		size: int64(len(first.GetBlob())) + int64(rest) + snapshotHashSize,
	}, nil
}

func (s *snapshotStream) Read(p []byte) (int, error) {
	for len(s.blob) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		err := s.rpc.RecvMsg(&s.msg)
		switch {
		case err == io.EOF && s.read != s.size:
			s.err = fmt.Errorf("%w: received %d bytes, announced %d", errSnapshotLength, s.read, s.size)
		case err != nil:
			s.err = err
		default:
			s.blob = s.msg.Blob
		}
	}
	if s.read+int64(len(s.blob)) > s.size {
		s.err = fmt.Errorf("%w: more than the %d bytes announced", errSnapshotLength, s.size)
		s.blob = nil
		return 0, s.err
	}
	n := copy(p, s.blob)
	s.blob = s.blob[n:]
	s.read += int64(n)
	return n, nil
}

// Close ends the stream (and the RPC, if it still runs).
func (s *snapshotStream) Close() error {
	s.closeOnce.Do(func() {
		if s.close != nil {
			s.close()
		}
	})
	return nil
}
