package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/objstore"
)

// Endpoint is one member the backup may take its snapshot from.
type Endpoint struct {
	// Name is the member's name, as status reports it.
	Name string
	// URL is the member's client URL.
	URL string
}

// Options are what one backup needs.
type Options struct {
	// Members are the cluster's members; the snapshot is taken from one of them that follows
	// a leader and answers a linearizable read, a follower by preference.
	Members []Endpoint
	// Conn is how the members are dialled.
	Conn etcdutil.ConnConfig
	// TLS, when set, are the files of the client certificate and CA the members are dialled
	// with (https): Take loads them into Conn. A backup pod of a cluster with client TLS has
	// them from the cluster's client Secret.
	TLS etcdutil.TLSFiles
	// Root is where the destination is mounted; Path the folder inside it (relative). For
	// an S3 destination, Root is unused and Path is the prefix of the object's key.
	Root, Path string
	// S3, when set, is the bucket the snapshot is streamed to instead of a file (TakeS3).
	S3 objstore.Config
	// Name is the snapshot file's name without its revision and extension:
	// <cluster>-<backup>. The file is <Name>-<revision>.db.
	Name string

	// stream, when set, replaces where the snapshot comes from (etcdutil.OpenSnapshot): tests
	// count and alter what goes through it.
	stream func(ctx context.Context, endpoint string, conn etcdutil.ConnConfig) (snapshotStream, error)
}

// Result is what a successful backup wrote.
type Result struct {
	Revision    int64  `json:"revision"`
	SizeBytes   int64  `json:"sizeBytes"`
	SHA256      string `json:"sha256"`
	EtcdVersion string `json:"etcdVersion,omitempty"`
	Member      string `json:"member"`
	// Location is the file's path relative to Root, or the object's key.
	Location string `json:"location"`
	// Seconds is how long Take (TakeS3) took, from its call to the snapshot stored and
	// checked: the backup pod's own work, without the pod's start.
	Seconds float64 `json:"seconds,omitempty"`
}

// FailureReason names why a backup failed, for the operator to report.
type FailureReason string

// The reasons a backup fails.
const (
	// FailureNoQuorum: no member followed a leader and answered a linearizable read.
	FailureNoQuorum FailureReason = "NoQuorum"
	// FailureNoSpace: the destination is full.
	FailureNoSpace FailureReason = "NoSpace"
	// FailureCorrupt: the snapshot written failed the integrity check.
	FailureCorrupt FailureReason = "SnapshotCorrupt"
	// FailureAccessDenied: the S3 store refused the credentials.
	FailureAccessDenied FailureReason = "AccessDenied"
	// FailureBucketNotFound: the S3 store has no such bucket.
	FailureBucketNotFound FailureReason = "BucketNotFound"
	// FailureUnreachable: the S3 store did not answer.
	FailureUnreachable FailureReason = "StoreUnreachable"
	// FailureError: anything else (a member that went away mid-stream, an I/O error).
	FailureError FailureReason = "Error"
)

// Failure is a failed backup's error, with its reason.
type Failure struct {
	Reason FailureReason
	Err    error
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// fail wraps err as a Failure, its reason read from err when it says more than reason.
func fail(reason FailureReason, err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, objstore.ErrQuota):
		reason = FailureNoSpace
	case errors.Is(err, objstore.ErrAccessDenied):
		reason = FailureAccessDenied
	case errors.Is(err, objstore.ErrBucketNotFound):
		reason = FailureBucketNotFound
	case errors.Is(err, objstore.ErrUnreachable):
		reason = FailureUnreachable
	case errors.Is(err, ErrCorrupt), errors.Is(err, objstore.ErrChecksumMismatch):
		reason = FailureCorrupt
	}
	return &Failure{Reason: reason, Err: err}
}

// Take streams a snapshot from one member to a temporary file in the destination folder,
// checking it as the bytes go by (etcd's hash at its end, and its SHA-256), reads its
// revision from the few pages of the database that hold it, syncs it, and renames it to
// <Name>-<revision>.db, syncing the folder. The snapshot is read once, from the member: the
// file is never read back whole. A snapshot that fails the check is never renamed. A failed
// attempt leaves no file but, at worst (killed mid-write), its temporary file, which the next
// attempt of the same backup replaces. Errors are *Failure.
func Take(ctx context.Context, o Options, f etcdutil.Factory, log *logrus.Entry) (Result, error) {
	start := time.Now()
	if err := o.loadTLS(); err != nil {
		return Result{}, err
	}
	from, st, err := choose(ctx, o.Members, o.Conn, f, log)
	if err != nil {
		return Result{}, err
	}
	dir := filepath.Join(o.Root, filepath.FromSlash(o.Path))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Result{}, fail(FailureError, fmt.Errorf("creating %s: %w", dir, err))
	}
	part := filepath.Join(dir, PartFile(o.Name))
	checked, rev, err := writePart(ctx, o, from, part)
	if err != nil {
		os.Remove(part)
		return Result{}, err
	}
	file := fmt.Sprintf("%s-%d.db", o.Name, rev)
	if err := os.Rename(part, filepath.Join(dir, file)); err != nil {
		os.Remove(part)
		return Result{}, fail(FailureError, fmt.Errorf("renaming %s: %w", part, err))
	}
	if err := syncDir(dir); err != nil {
		return Result{}, fail(FailureError, err)
	}
	return Result{
		Revision: rev, SizeBytes: checked.SizeBytes, SHA256: checked.SHA256, EtcdVersion: st.Version,
		Member: from.Name, Location: path.Join(strings.Trim(path.Clean("/"+o.Path), "/"), file),
		Seconds: time.Since(start).Seconds(),
	}, nil
}

// loadTLS loads the files of o.TLS, when set, into o.Conn.
func (o *Options) loadTLS() error {
	if o.TLS.IsZero() {
		return nil
	}
	conn, err := o.TLS.ConnConfig()
	if err != nil {
		return fail(FailureError, fmt.Errorf("loading the client certificate: %w", err))
	}
	o.Conn.TLS = conn.TLS
	return nil
}

// writePart writes the member's snapshot to the file part, created anew, through a Verifier,
// and checks it once the stream ends. Only then does it read the snapshot's revision, from the
// pages that hold it (RevisionAt), and sync the file.
func writePart(ctx context.Context, o Options, from Endpoint, part string) (Checked, int64, error) {
	if err := os.Remove(part); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Checked{}, 0, fail(FailureError, fmt.Errorf("removing an earlier attempt's %s: %w", part, err))
	}
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return Checked{}, 0, fail(FailureError, fmt.Errorf("creating %s: %w", part, err))
	}
	defer out.Close()
	in, err := o.openSnapshot(ctx, from.URL, o.Conn)
	if err != nil {
		return Checked{}, 0, fail(FailureError, err)
	}
	defer in.Close()
	v := NewVerifier()
	if _, err := io.Copy(io.MultiWriter(&writeBehind{f: out}, v), in); err != nil {
		return Checked{}, 0, fail(FailureError, fmt.Errorf("streaming the snapshot of %s to %s: %w", from.Name, part, err))
	}
	checked, err := v.Check("the snapshot streamed from " + from.Name)
	if err != nil {
		return Checked{}, 0, fail(FailureCorrupt, err)
	}
	rev, err := RevisionAt(out, checked.SizeBytes-sha256.Size)
	if err != nil {
		return Checked{}, 0, fail(FailureError, fmt.Errorf("reading the revision of %s: %w", part, err))
	}
	// The fsync makes the file durable before it is renamed into place and reported.
	if err := out.Sync(); err != nil {
		return Checked{}, 0, fail(FailureError, fmt.Errorf("syncing %s: %w", part, err))
	}
	if err := out.Close(); err != nil {
		return Checked{}, 0, fail(FailureError, fmt.Errorf("closing %s: %w", part, err))
	}
	return checked, rev, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// PartFile is the temporary file, relative to the destination folder, that a backup's
// attempts write before the snapshot is verified and renamed.
func PartFile(name string) string { return "." + name + ".part" }

// Delete removes the files at the paths rel, relative to root. A file already gone is not an
// error.
func Delete(root string, rel ...string) error {
	for _, r := range rel {
		file := filepath.Join(root, filepath.FromSlash(r))
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("deleting %s: %w", file, err)
		}
	}
	return nil
}
