package etcdutil

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/mem"
)

// StreamBufferPool is the gRPC buffer pool for a process that receives snapshot streams (the
// agent's: experimental.SetDefaultBufferPool). etcd sends a snapshot in messages of 32 KiB
// and a few bytes; gRPC's default pool (tiers of 256 B, 4, 16 and 32 KiB, and 1 MiB) takes
// the buffer each is read into from its 1 MiB tier and zeroes it whole, 32 times the bytes
// received. This one has a 64 KiB tier too, which takes them instead.
func StreamBufferPool() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(8, 12, 14, 15, 16, 20)
	if err != nil {
		panic(err) // the exponents are constants this platform's slices hold
	}
	return p
}

// Snapshot is a member's snapshot stream (OpenSnapshot): its database, then the database's
// SHA-256.
type Snapshot struct {
	ctx context.Context
	cli *clientv3.Client
	ss  pb.Maintenance_SnapshotClient
	// size is what the member announced; blob what is left of the last message received.
	size int64
	blob []byte
}

// OpenSnapshot opens etcd's snapshot stream from the member at endpoint alone: its database
// followed by the database's SHA-256, point in time of that member. The stream is bounded by
// ctx only (a large database takes as long as it takes); connecting is bounded by the
// factory's dial timeout. It receives the stream's first message, which announces its size.
// The stream is never opened again: a broken one is an error of Read, not a snapshot that
// starts over. Closing it closes the stream and its connection. Its client keeps gRPC's read
// buffer, which the factory's clients go without (dialOptions): the stream moves the whole
// database.
func OpenSnapshot(ctx context.Context, endpoint string, conn ConnConfig) (*Snapshot, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: DefaultDialTimeout,
		TLS:         tlsConfig(conn),
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %s: %w", endpoint, err)
	}
	ss, err := pb.NewMaintenanceClient(cli.ActiveConnection()).Snapshot(ctx, &pb.SnapshotRequest{})
	var first *pb.SnapshotResponse
	if err == nil {
		first, err = ss.Recv()
	}
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("opening snapshot stream from %s: %w", endpoint, mapErr(clientv3.ContextError(ctx, err)))
	}
	// Each message but the last says how many bytes of the database are left after its own;
	// the last is the hash.
	size := int64(first.RemainingBytes) + int64(len(first.Blob)) + sha256.Size
	return &Snapshot{ctx: ctx, cli: cli, ss: ss, size: size, blob: first.Blob}, nil
}

// Size is the stream's length as the member announced it in its first message: the
// database's size and its hash's. Only the stream's end shows that the member kept to it.
func (s *Snapshot) Size() int64 { return s.size }

// Read reads the stream; io.EOF once the member ended it.
func (s *Snapshot) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(s.blob) == 0 {
		resp, err := s.ss.Recv()
		if err == io.EOF {
			return 0, io.EOF
		}
		if err != nil {
			return 0, mapErr(clientv3.ContextError(s.ctx, err))
		}
		s.blob = resp.Blob
	}
	n := copy(p, s.blob)
	s.blob = s.blob[n:]
	return n, nil
}

// Close ends the stream and closes its connection.
func (s *Snapshot) Close() error {
	s.blob = nil
	return s.cli.Close()
}
