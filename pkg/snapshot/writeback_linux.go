package snapshot

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing n bytes of f from off to disk, and returns
// without waiting (sync_file_range with SYNC_FILE_RANGE_WRITE). It is advice: the fsync
// before the rename is what makes the file durable, so a refusal (a seccomp profile without
// the call) is ignored.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
