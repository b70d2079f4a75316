package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/objstore"
)

// Store is the bucket TakeS3 writes to (s3.Store, or a fake in tests).
type Store interface {
	// Check fails when the bucket cannot be written: wrong credentials, no such bucket, no
	// answer.
	Check(ctx context.Context) error
	// Put streams r to the object key; the object appears whole or not at all. size, when not
	// -1, is r's length: the store may complete the object once it has size bytes, so r must
	// hold its last bytes back until it knows them good. An error of r, the one of its last
	// read included, fails the upload: no object appears.
	Put(ctx context.Context, key string, r io.Reader, size int64) (int64, error)
	// PutBytes stores b as the object key.
	PutBytes(ctx context.Context, key string, b []byte) error
	// Open opens the object key; an error wrapping objstore.ErrNotFound when there is none.
	Open(ctx context.Context, key string) (objstore.Object, error)
	// Delete deletes the objects keys; one already gone is not an error.
	Delete(ctx context.Context, keys ...string) error
}

// ObjectKey is the key of the snapshot named name under prefix: <prefix>/<name>.db. Unlike a
// file's, it carries no revision: the revision is known only once the object is stored, and
// an S3 object cannot be renamed without copying it.
func ObjectKey(prefix, name string) string {
	return strings.TrimPrefix(path.Join("/", prefix, name+".db"), "/")
}

// SumKey is the object beside a snapshot's that holds its SHA-256 as sha256sum writes it,
// stored once the snapshot is verified: a restore from the key alone checks the download
// against it.
func SumKey(key string) string { return key + ".sha256" }

// TakeS3 streams a snapshot from one member to the object ObjectKey(o.Path, o.Name) of the
// bucket, checking it as the bytes go by (etcd's hash at its end, and its SHA-256), without
// holding it whole anywhere. It checks the bucket before asking etcd for anything. The
// stream's last bytes reach the store only once it passed the check: one that fails it fails
// the upload before it completes, so no object appears. It then reads the revision from the
// object by ranged reads of a few pages (RevisionAt) and stores the SHA-256 beside it
// (SumKey); an object whose revision cannot be read is deleted. The snapshot is read once,
// from the member: the object is never read back whole. Errors are *Failure.
func TakeS3(ctx context.Context, o Options, st Store, f etcdutil.Factory, log *logrus.Entry) (Result, error) {
	start := time.Now()
	if err := o.loadTLS(); err != nil {
		return Result{}, err
	}
	if err := st.Check(ctx); err != nil {
		return Result{}, fail(FailureError, err)
	}
	from, status, err := choose(ctx, o.Members, o.Conn, f, log)
	if err != nil {
		return Result{}, err
	}
	key := ObjectKey(o.Path, o.Name)
	checked, err := upload(ctx, o, from, st, key)
	if err != nil {
		return Result{}, err
	}
	rev, err := objectRevision(ctx, st, key, checked.SizeBytes)
	if err == nil {
		sum := fmt.Sprintf("%s  %s\n", checked.SHA256, path.Base(key))
		if perr := st.PutBytes(ctx, SumKey(key), []byte(sum)); perr != nil {
			err = fail(FailureError, perr)
		}
	}
	if err != nil {
		if derr := st.Delete(ctx, key, SumKey(key)); derr != nil {
			log.WithError(derr).Warn("Cannot delete the snapshot that failed")
		}
		return Result{}, err
	}
	return Result{Revision: rev, SizeBytes: checked.SizeBytes, SHA256: checked.SHA256, EtcdVersion: status.Version,
		Member: from.Name, Location: key, Seconds: time.Since(start).Seconds()}, nil
}

// upload streams the member's snapshot to the object key through a verifyingReader, of the
// size the member announced: a stream that fails the check fails the upload before it
// completes.
func upload(ctx context.Context, o Options, from Endpoint, st Store, key string) (Checked, error) {
	in, err := o.openSnapshot(ctx, from.URL, o.Conn)
	if err != nil {
		return Checked{}, fail(FailureError, err)
	}
	defer in.Close()
	r := newVerifyingReader(in, in.Size(), "the snapshot streamed from "+from.Name)
	n, err := st.Put(ctx, key, r, in.Size())
	if err != nil && r.err == nil {
		return Checked{}, fail(FailureError, fmt.Errorf("streaming the snapshot of %s: %w", from.Name, err))
	}
	// With r's error, the store gave up the upload: the object was never completed.
	written, cerr := r.v.Check(r.name)
	if cerr == nil {
		cerr = r.err
	}
	if cerr == nil && (!r.checked || n != written.SizeBytes) {
		cerr = fmt.Errorf("%w: %s stored as %d bytes, not the %d bytes streamed", ErrCorrupt, key, n, written.SizeBytes)
	}
	if cerr != nil && err == nil {
		// A store that completed the upload all the same: the object must not stay.
		if derr := st.Delete(ctx, key); derr != nil {
			cerr = errors.Join(cerr, derr)
		}
	}
	if cerr != nil {
		return Checked{}, fail(FailureCorrupt, cerr)
	}
	return written, nil
}

// objectRevision reads the revision of the object key, of size bytes, from the few pages that
// hold it.
func objectRevision(ctx context.Context, st Store, key string, size int64) (int64, error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return 0, fail(FailureError, fmt.Errorf("opening %s to read its revision: %w", key, err))
	}
	defer obj.Close()
	if obj.Size() != size {
		return 0, fail(FailureCorrupt, fmt.Errorf("%w: %s is %d bytes in the store, not the %d bytes streamed", ErrCorrupt, key, obj.Size(), size))
	}
	rev, err := RevisionAt(obj, size-sha256.Size)
	if err != nil {
		return 0, fail(FailureError, fmt.Errorf("reading the revision of %s: %w", key, err))
	}
	return rev, nil
}
