package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/objstore"
)

// Store is the bucket TakeS3 writes to (objstore.Store, or a fake in tests).
type Store interface {
	// Check fails when the bucket cannot be written: wrong credentials, no such bucket, no
	// answer.
	Check(ctx context.Context) error
	// Put streams r to the object key; the object appears whole or not at all.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// PutBytes stores b as the object key.
	PutBytes(ctx context.Context, key string, b []byte) error
	// Open opens the object key; an error wrapping objstore.ErrNotFound when there is none.
	Open(ctx context.Context, key string) (objstore.Object, error)
	// Delete deletes the objects keys; one already gone is not an error.
	Delete(ctx context.Context, keys ...string) error
}

var _ Store = (*objstore.Store)(nil)

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
// bucket, checking etcd's hash and computing the SHA-256 on the way, without holding it
// whole anywhere. It checks the bucket before asking etcd for anything. It then reads the
// object back and checks it as Take checks its file (etcd's hash, the size and SHA-256
// written), reads the revision from it by ranged reads (RevisionAt), and stores the SHA-256
// beside it (SumKey). A snapshot that fails a check is deleted. Errors are *Failure.
func TakeS3(ctx context.Context, o Options, st Store, f etcdutil.Factory, log *logrus.Entry) (Result, error) {
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
	written, err := upload(ctx, from, o.Conn, st, key)
	if err != nil {
		return Result{}, err
	}
	checked, rev, err := readBack(ctx, st, key)
	if err == nil && (checked.SizeBytes != written.SizeBytes || checked.SHA256 != written.SHA256) {
		err = fail(FailureCorrupt, fmt.Errorf("%w: %s reads back as %d bytes, SHA-256 %s, not the %d bytes, SHA-256 %s written",
			ErrCorrupt, key, checked.SizeBytes, checked.SHA256, written.SizeBytes, written.SHA256))
	}
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
		Member: from.Name, Location: key}, nil
}

// upload streams the member's snapshot to the object key through a Verifier.
func upload(ctx context.Context, from Endpoint, conn etcdutil.ConnConfig, st Store, key string) (Checked, error) {
	in, err := etcdutil.OpenSnapshot(ctx, from.URL, conn)
	if err != nil {
		return Checked{}, fail(FailureError, err)
	}
	defer in.Close()
	v := NewVerifier()
	if _, err := st.Put(ctx, key, io.TeeReader(in, v)); err != nil {
		return Checked{}, fail(FailureError, fmt.Errorf("streaming the snapshot of %s: %w", from.Name, err))
	}
	written, err := v.Check("the snapshot streamed from " + from.Name)
	if err != nil {
		// What etcd sent is not a whole snapshot: the object must not stay.
		if derr := st.Delete(ctx, key); derr != nil {
			err = errors.Join(err, derr)
		}
		return Checked{}, fail(FailureCorrupt, err)
	}
	return written, nil
}

// readBack reads the object key to its end, checks it, and reads its revision.
func readBack(ctx context.Context, st Store, key string) (Checked, int64, error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return Checked{}, 0, fail(FailureError, fmt.Errorf("reading back: %w", err))
	}
	defer obj.Close()
	// fail reads SnapshotCorrupt from ErrCorrupt: a store that stops answering mid-read is
	// not a corrupt snapshot.
	checked, err := VerifyReader(obj, key)
	if err != nil {
		return Checked{}, 0, fail(FailureError, err)
	}
	rev, err := RevisionAt(obj, checked.SizeBytes-sha256.Size)
	if err != nil {
		return Checked{}, 0, fail(FailureError, err)
	}
	return checked, rev, nil
}
