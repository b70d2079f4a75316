package etcdutil

import (
	"context"
	"fmt"
	"io"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// OpenSnapshot opens etcd's snapshot stream from the member at endpoint alone: its database
// followed by the database's SHA-256, point in time of that member. The stream is bounded by
// ctx only (a large database takes as long as it takes); connecting is bounded by the
// factory's dial timeout. Closing the returned reader closes the stream and its connection.
// Its client keeps gRPC's read buffer, which the factory's clients go without (dialOptions):
// the stream moves the whole database.
func OpenSnapshot(ctx context.Context, endpoint string, conn ConnConfig) (io.ReadCloser, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: DefaultDialTimeout,
		TLS:         tlsConfig(conn),
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %s: %w", endpoint, err)
	}
	resp, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("opening snapshot stream from %s: %w", endpoint, mapErr(err))
	}
	return &snapshotStream{ReadCloser: resp.Snapshot, cli: cli}, nil
}

// snapshotStream closes its client with the stream.
type snapshotStream struct {
	io.ReadCloser
	cli *clientv3.Client
}

func (s *snapshotStream) Close() error {
	err := s.ReadCloser.Close()
	if cerr := s.cli.Close(); err == nil {
		err = cerr
	}
	return err
}
