package etcdadmin

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	protov2 "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// snapshotWindow is the gRPC flow-control window (per stream and per connection) of a
// snapshot client: what the client may buffer while the upload is slower than etcd
// sends. Setting it turns off gRPC's bandwidth-delay estimation, which may grow the
// window up to 16 MiB, so the bound is fixed. 1 MiB per round trip is far above a
// store's upload rate within a cluster.
const snapshotWindow = 1 << 20

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
