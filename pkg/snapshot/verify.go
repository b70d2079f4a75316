// Package snapshot is what the agent binary (cmd/etcd-operator-agent, in the operator's image)
// does with etcd snapshot files, outside the operator's process: the backup pod's `etcd-operator backup` streams a snapshot from one
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
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
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
// way without being read twice. It hashes each byte once: the SHA-256 of all but the last 32
// bytes written (the database), which Check compares with those bytes (etcd's hash), and from
// which it derives the SHA-256 of the whole by going on from a copy of the database's state.
type Verifier struct {
	db   hash.Hash
	size int64
	// tail holds the last bytes written, up to sha256.Size: the hash, once the stream ends.
	tail []byte
	buf  [2 * sha256.Size]byte
}

// NewVerifier returns a Verifier that has seen nothing.
func NewVerifier() *Verifier {
	v := &Verifier{db: sha256.New()}
	v.tail = v.buf[:0]
	return v
}

// Write never fails.
func (v *Verifier) Write(p []byte) (int, error) {
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

// Check says whether what was written so far is a whole snapshot, and what it was; name says
// what it is, in errors, which wrap ErrCorrupt. It may be called more than once.
func (v *Verifier) Check(name string) (Checked, error) {
	if v.size <= sha256.Size || v.size%sectorSize != sha256.Size {
		return Checked{}, fmt.Errorf("%w: %s is %d bytes, not a database followed by its SHA-256", ErrCorrupt, name, v.size)
	}
	// The whole file's SHA-256 goes on from the database's state with etcd's hash; Sum leaves
	// the state it is called on as it was.
	c, ok := v.db.(hash.Cloner)
	if !ok {
		return Checked{}, fmt.Errorf("hashing %s: this build's SHA-256 cannot copy its state", name)
	}
	whole, err := c.Clone()
	if err != nil {
		return Checked{}, fmt.Errorf("hashing %s: %w", name, err)
	}
	if !bytes.Equal(v.db.Sum(nil), v.tail) {
		return Checked{}, fmt.Errorf("%w: the SHA-256 of %s's database does not match the hash at its end", ErrCorrupt, name)
	}
	whole.Write(v.tail)
	return Checked{SizeBytes: v.size, SHA256: hex.EncodeToString(whole.Sum(nil))}, nil
}

// etcd's bbolt layout: revisions are keys of the "key" bucket, 8 bytes of main revision
// (big-endian) first; the "meta" bucket keeps the last finished compaction's revision the same
// way.
var (
	keyBucket          = []byte("key")
	metaBucket         = []byte("meta")
	finishedCompactKey = []byte("finishedCompactRev")
)
