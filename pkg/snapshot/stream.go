package snapshot

import (
	"context"
	"io"
	"os"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// snapshotStream is a member's snapshot as it streams, with the size the member announced
// (etcdutil.Snapshot).
type snapshotStream interface {
	io.ReadCloser
	// Size is the stream's announced length, the hash included; -1 when unknown.
	Size() int64
}

// openSnapshot opens the member's snapshot stream: etcdutil.OpenSnapshot, or the test's.
func (o *Options) openSnapshot(ctx context.Context, endpoint string, conn etcdutil.ConnConfig) (snapshotStream, error) {
	if o.stream != nil {
		return o.stream(ctx, endpoint, conn)
	}
	s, err := etcdutil.OpenSnapshot(ctx, endpoint, conn)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// writeBehindChunk is how much is written to the file between two requests that the kernel
// start writing it to disk.
const writeBehindChunk = 8 << 20

// writeBehind writes to a file and, every writeBehindChunk bytes, asks the kernel to start
// writing what was just written to disk, without waiting for it (startWriteback). The disk
// then works while the stream goes on, instead of the whole snapshot waiting in dirty pages
// for the final fsync, and the dirty pages, which count against the pod's memory limit, stay
// few.
type writeBehind struct {
	f                *os.File
	written, started int64
}

func (w *writeBehind) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	if w.written-w.started >= writeBehindChunk {
		startWriteback(w.f, w.started, w.written-w.started)
		w.started = w.written
	}
	return n, err
}
