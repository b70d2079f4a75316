package snapshot

import (
	"context"
	"io"
	"os"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// openSnapshot opens the member's snapshot stream: etcdutil.OpenSnapshot, or the test's.
func (o *Options) openSnapshot(ctx context.Context, endpoint string, conn etcdutil.ConnConfig) (io.ReadCloser, error) {
	if o.stream != nil {
		return o.stream(ctx, endpoint, conn)
	}
	return etcdutil.OpenSnapshot(ctx, endpoint, conn)
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
