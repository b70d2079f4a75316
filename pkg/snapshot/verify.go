// Package snapshot is what the operator's binary does with etcd snapshot files outside the
// operator's own process: the backup pod's `etcd-operator backup` streams a snapshot from one
// member to a file (Take), and member-init checks a file before restoring a seed from it
// (Verify). Neither holds a snapshot in memory: a 2 GiB database is streamed through a small
// buffer.
//
// A snapshot file is what etcd's Maintenance.Snapshot sends: the member's bbolt database,
// followed by the SHA-256 of the database (32 bytes). etcd's own restore checks that hash;
// Verify checks it the same way, so a truncated or corrupted file is refused before anything
// is written from it.
package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrCorrupt is wrapped by Verify's error when a file is not a whole etcd snapshot: too
// short, not a database followed by its hash, or a hash that does not match.
var ErrCorrupt = errors.New("snapshot corrupt or truncated")

// sectorSize: etcd's database is a whole number of pages, each a multiple of 512 bytes, so a
// snapshot's size modulo 512 is the size of the hash appended to it.
const sectorSize = 512

// Checked is what Verify found of a file.
type Checked struct {
	// SizeBytes is the file's size, the hash included.
	SizeBytes int64
	// SHA256 is the hex SHA-256 of the whole file.
	SHA256 string
}

// Verify reads the file at path once and checks that it is a database followed by the
// SHA-256 of the database. It returns an error wrapping ErrCorrupt when it is not, and
// wrapping os.ErrNotExist when there is no such file.
func Verify(path string) (Checked, error) {
	f, err := os.Open(path)
	if err != nil {
		return Checked{}, fmt.Errorf("opening snapshot: %w", err)
	}
	defer f.Close()
	return VerifyReader(f, path)
}

// VerifyReader reads a snapshot from r to its end and checks it as Verify does; name says
// what r is, in errors.
func VerifyReader(r io.Reader, name string) (Checked, error) {
	v := NewVerifier()
	if _, err := io.Copy(v, r); err != nil {
		return Checked{}, fmt.Errorf("reading snapshot %s: %w", name, err)
	}
	return v.Check(name)
}

// Verifier checks a snapshot as it is written through it, so that a stream is checked on its
// way without being read twice: the SHA-256 of everything written, and the SHA-256 of all but
// its last 32 bytes, which Check compares with those bytes.
type Verifier struct {
	whole, db hash.Hash
	size      int64
	// tail holds the last bytes written, up to sha256.Size: the hash, once the stream ends.
	tail []byte
	buf  [2 * sha256.Size]byte
}

// NewVerifier returns a Verifier that has seen nothing.
func NewVerifier() *Verifier {
	v := &Verifier{whole: sha256.New(), db: sha256.New()}
	v.tail = v.buf[:0]
	return v
}

// Write never fails.
func (v *Verifier) Write(p []byte) (int, error) {
	v.whole.Write(p)
	v.size += int64(len(p))
	if len(p) >= sha256.Size {
		v.db.Write(v.tail)
		v.db.Write(p[:len(p)-sha256.Size])
		v.tail = append(v.buf[:0], p[len(p)-sha256.Size:]...)
		return len(p), nil
	}
	v.tail = append(v.tail, p...)
	if extra := len(v.tail) - sha256.Size; extra > 0 {
		v.db.Write(v.tail[:extra])
		v.tail = append(v.buf[:0], v.tail[extra:]...)
	}
	return len(p), nil
}

// Check says whether what was written is a whole snapshot, and what it was; name says what it
// is, in errors, which wrap ErrCorrupt.
func (v *Verifier) Check(name string) (Checked, error) {
	if v.size <= sha256.Size || v.size%sectorSize != sha256.Size {
		return Checked{}, fmt.Errorf("%w: %s is %d bytes, not a database followed by its SHA-256", ErrCorrupt, name, v.size)
	}
	if !bytes.Equal(v.db.Sum(nil), v.tail) {
		return Checked{}, fmt.Errorf("%w: the SHA-256 of %s's database does not match the hash at its end", ErrCorrupt, name)
	}
	return Checked{SizeBytes: v.size, SHA256: hex.EncodeToString(v.whole.Sum(nil))}, nil
}

// etcd's bbolt layout: revisions are keys of the "key" bucket, 8 bytes of main revision
// (big-endian) first; the "meta" bucket keeps the last finished compaction's revision the same
// way.
var (
	keyBucket          = []byte("key")
	metaBucket         = []byte("meta")
	finishedCompactKey = []byte("finishedCompactRev")
)

// boltOpenTimeout bounds the wait for bbolt's file lock, which nothing else holds.
const boltOpenTimeout = 10 * time.Second

// Revision reads the etcd revision a verified snapshot file holds: the highest revision of its
// keys, or of its last compaction when that is higher (a compaction removes a deleted key's
// last revision); 1, the revision etcd starts its store at, when it has neither (a cluster
// that never held a key). It opens the database read-only.
func Revision(path string) (int64, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: boltOpenTimeout})
	if err != nil {
		return 0, fmt.Errorf("%w: opening %s's database: %v", ErrCorrupt, path, err)
	}
	defer db.Close()
	var rev int64
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(keyBucket); b != nil {
			if k, _ := b.Cursor().Last(); len(k) >= 8 {
				rev = int64(binary.BigEndian.Uint64(k[:8]))
			}
		}
		if b := tx.Bucket(metaBucket); b != nil {
			if v := b.Get(finishedCompactKey); len(v) >= 8 {
				rev = max(rev, int64(binary.BigEndian.Uint64(v[:8])))
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reading %s's revision: %w", path, err)
	}
	return max(rev, 1), nil
}
