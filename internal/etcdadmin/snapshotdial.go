package etcdadmin

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	protov2 "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// snapshotWindow is the gRPC flow-control window (per stream and per connection) of a
// snapshot client: how far etcd may send ahead of the upload. A backup is a pipeline of
// three processes (etcd, this one, the store) that stall at different moments (a
// store's write or GC pause, etcd's page reads); the window is what lets etcd keep
// sending through the upload's stalls instead of waiting for them. Measured in
// BenchmarkBackup256MiB on 2 shared cores: 1 MiB gave 0.72–0.93× etcdctl's throughput,
// 4 MiB 0.96–1.14× and 8 MiB 0.95–1.07×, each window adding its size to the memory a
// backup holds at most (RSS growth 4, 8 and 11 MiB). Setting it also turns off gRPC's
// bandwidth-delay estimation, which could grow the window to 16 MiB: the bound stays
// fixed.
const snapshotWindow = 4 << 20

// snapshotBufferPool holds the buffers a snapshot client decodes messages from. etcd
// sends a snapshot as messages of a 32 KiB blob plus a few header bytes; gRPC's proto
// codec takes them from its default pool, which has no size between 32 KiB and 1 MiB,
// so every message took, and zeroed, a 1 MiB buffer: in BenchmarkBackup256MiB that
// zeroing was a fifth of the backup's CPU. The 64 KiB tier fits a message.
var snapshotBufferPool = func() mem.BufferPool {
	// 256 B, 4 KiB (a page), 16 KiB (an HTTP/2 frame), 32 KiB, 64 KiB (a snapshot
	// message), 1 MiB: the default tiers plus 64 KiB.
	p, err := mem.NewBinaryTieredBufferPool(8, 12, 14, 15, 16, 20)
	if err != nil {
		panic(fmt.Sprintf("etcdadmin: snapshot buffer pool: %v", err))
	}
	return p
}()

// snapshotCodec is gRPC's proto codec decoding from snapshotBufferPool.
type snapshotCodec struct{ encoding.CodecV2 }

func (c snapshotCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*pb.SnapshotResponse); ok {
		buf := data.MaterializeToBuffer(snapshotBufferPool)
		defer buf.Free()
		return decodeSnapshotResponse(buf.ReadOnlyData(), r)
	}
	var m protov2.Message
	switch v := v.(type) {
	case protoadapt.MessageV2:
		m = v
	case protoadapt.MessageV1:
		m = protoadapt.MessageV2Of(v)
	default:
		return fmt.Errorf("snapshot codec: %T is not a proto message", v)
	}
	buf := data.MaterializeToBuffer(snapshotBufferPool)
	defer buf.Free()
	return protov2.Unmarshal(buf.ReadOnlyData(), m)
}

// snapshotDialOptions are the gRPC options of a client that streams a snapshot.
func snapshotDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(snapshotCodec{encoding.GetCodecV2(proto.Name)})),
		grpc.WithInitialWindowSize(snapshotWindow),
		grpc.WithInitialConnWindowSize(snapshotWindow),
	}
}

// dialSnapshot connects to one endpoint for a snapshot stream.
func (a *Admin) dialSnapshot(ep string) (*clientv3.Client, error) {
	cfg := clientConfig(a.cfg, []string{ep})
	cfg.DialOptions = append(cfg.DialOptions, snapshotDialOptions()...)
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, &Error{Op: "dial", Target: ep, Kind: ErrUnavailable, Err: err, Attempts: 1}
	}
	return c, nil
}

// decodeSnapshotResponse decodes a SnapshotResponse into m, reusing m.Blob's array:
// the snapshot stream receives every message into one SnapshotResponse, so a snapshot
// no longer allocates (and zeroes, and collects) its whole size in 32 KiB blobs.
func decodeSnapshotResponse(b []byte, m *pb.SnapshotResponse) error {
	blob := m.Blob[:0]
	m.Reset()
	m.Blob = blob
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("snapshot response: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType: // header
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("snapshot response header: %w", protowire.ParseError(n))
			}
			m.Header = &pb.ResponseHeader{}
			if err := protov2.Unmarshal(v, m.Header); err != nil {
				return fmt.Errorf("snapshot response header: %w", err)
			}
			b = b[n:]
		case num == 2 && typ == protowire.VarintType: // remaining_bytes
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("snapshot response remaining_bytes: %w", protowire.ParseError(n))
			}
			m.RemainingBytes = v
			b = b[n:]
		case num == 3 && typ == protowire.BytesType: // blob
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("snapshot response blob: %w", protowire.ParseError(n))
			}
			m.Blob = append(m.Blob, v...)
			b = b[n:]
		case num == 4 && typ == protowire.BytesType: // version
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("snapshot response version: %w", protowire.ParseError(n))
			}
			m.Version = string(v)
			b = b[n:]
		default: // a field this client does not know: skipped, as proto would
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("snapshot response field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return nil
}
