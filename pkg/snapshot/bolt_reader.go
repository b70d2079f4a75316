package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
)

// RevisionAt reads the etcd revision a verified snapshot holds: the highest revision of its
// keys, or of its last compaction when that is higher (a compaction removes a deleted key's
// last revision); 1, the revision etcd starts its store at, when it has neither (a cluster
// that never held a key). It reads at offsets only, a file's or an S3 object's by ranged
// requests, and walks bbolt's pages itself, reading only the meta pages, the root bucket's
// path to the "key" and "meta" buckets, and their rightmost path: a few pages of a database
// of any size, where bbolt itself maps the whole file. size is the database's size, etcd's
// hash excluded.
func RevisionAt(r io.ReaderAt, size int64) (int64, error) {
	db := &boltReader{r: r, size: size}
	rev, err := db.revision()
	switch {
	case db.readErr != nil:
		// The reader failed, not the database: not a corrupt snapshot.
		return 0, fmt.Errorf("reading the snapshot's database: %w", db.readErr)
	case err != nil:
		return 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return max(rev, 1), nil
}

func (db *boltReader) revision() (int64, error) {
	root, err := db.root()
	if err != nil {
		return 0, err
	}
	var rev int64
	if k, ok, err := db.lastKey(root, keyBucket); err != nil {
		return 0, fmt.Errorf("reading bucket %s: %v", keyBucket, err)
	} else if ok && len(k) >= 8 {
		rev = int64(binary.BigEndian.Uint64(k[:8]))
	}
	if v, ok, err := db.get(root, metaBucket, finishedCompactKey); err != nil {
		return 0, fmt.Errorf("reading bucket %s: %v", metaBucket, err)
	} else if ok && len(v) >= 8 {
		rev = max(rev, int64(binary.BigEndian.Uint64(v[:8])))
	}
	return rev, nil
}

// bbolt's layout (go.etcd.io/bbolt/internal/common), little-endian as the members that write
// it: a page is a 16-byte header (id, flags, count, overflow) and its elements; a meta page's
// body is magic, version, page size, flags, the root bucket (root page, sequence), freelist,
// high-water page, transaction ID and an FNV-64a checksum of the fields before it.
const (
	boltPageHeader  = 16
	boltElementSize = 16
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltBranchPage  = 0x01
	boltLeafPage    = 0x02
	boltBucketLeaf  = 0x01
	boltMetaSize    = 64
	// boltMaxDepth bounds a walk down a tree: a damaged page that points back up must not
	// loop; a real tree of etcd's is a handful of levels deep.
	boltMaxDepth = 64
	// boltMaxPage bounds one page read (overflow included): a damaged header must not make
	// the walk read gigabytes.
	boltMaxPage = 256 << 20
)

type boltReader struct {
	r        io.ReaderAt
	size     int64
	pageSize int64
	// readErr is the first error of r.
	readErr error
}

// readAt fills p from off; a failure of the reader is kept in readErr.
func (db *boltReader) readAt(p []byte, off int64) error {
	if _, err := db.r.ReadAt(p, off); err != nil {
		if db.readErr == nil {
			db.readErr = err
		}
		return err
	}
	return nil
}

// bucket is where a bucket's tree starts: a page of the file, or, for an inline bucket, the
// page held in its value.
type bucket struct {
	root   uint64
	inline []byte
}

// root reads the newest valid meta page and returns the root bucket.
func (db *boltReader) root() (bucket, error) {
	var best []byte
	var bestTx uint64
	for _, off := range []int64{0, -1} {
		if off < 0 {
			if db.pageSize == 0 {
				break
			}
			off = db.pageSize
		}
		m := make([]byte, boltPageHeader+boltMetaSize)
		if off+int64(len(m)) > db.size || db.readAt(m, off) != nil {
			continue
		}
		m = m[boltPageHeader:]
		le := binary.LittleEndian
		h := fnv.New64a()
		h.Write(m[:56])
		if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion || le.Uint64(m[56:]) != h.Sum64() {
			continue
		}
		if ps := int64(le.Uint32(m[8:])); db.pageSize == 0 && ps >= 512 && ps <= 1<<20 {
			db.pageSize = ps
		}
		if tx := le.Uint64(m[48:]); best == nil || tx > bestTx {
			best, bestTx = m, tx
		}
	}
	if best == nil || db.pageSize == 0 {
		return bucket{}, fmt.Errorf("no valid bbolt meta page")
	}
	return bucket{root: binary.LittleEndian.Uint64(best[16:])}, nil
}

// page reads page id, overflow included.
func (db *boltReader) page(id uint64) ([]byte, error) {
	off := int64(id) * db.pageSize
	if id < 2 || off/db.pageSize != int64(id) || off+db.pageSize > db.size {
		return nil, fmt.Errorf("page %d is outside the database", id)
	}
	head := make([]byte, boltPageHeader)
	if err := db.readAt(head, off); err != nil {
		return nil, fmt.Errorf("reading page %d: %w", id, err)
	}
	n := (int64(binary.LittleEndian.Uint32(head[12:])) + 1) * db.pageSize
	if n > boltMaxPage || off+n > db.size {
		return nil, fmt.Errorf("page %d overflows the database", id)
	}
	p := make([]byte, n)
	if err := db.readAt(p, off); err != nil {
		return nil, fmt.Errorf("reading page %d: %w", id, err)
	}
	return p, nil
}

// element is one element of a branch or leaf page.
type element struct {
	flags      uint32
	key, value []byte
	child      uint64
}

// elements parses page p.
func elements(p []byte) (leaf bool, out []element, err error) {
	if len(p) < boltPageHeader {
		return false, nil, fmt.Errorf("page shorter than its header")
	}
	le := binary.LittleEndian
	flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
	if flags != boltBranchPage && flags != boltLeafPage {
		return false, nil, fmt.Errorf("page of flags %#x is neither a branch nor a leaf", flags)
	}
	leaf = flags == boltLeafPage
	for i := range count {
		at := boltPageHeader + i*boltElementSize
		if at+boltElementSize > len(p) {
			return false, nil, fmt.Errorf("element %d past the page's end", i)
		}
		e := p[at : at+boltElementSize]
		var el element
		var pos, ksize, vsize int
		if leaf {
			el.flags, pos, ksize, vsize = le.Uint32(e), int(le.Uint32(e[4:])), int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
		} else {
			pos, ksize, el.child = int(le.Uint32(e)), int(le.Uint32(e[4:])), le.Uint64(e[8:])
		}
		start := at + pos
		if pos < 0 || ksize < 0 || vsize < 0 || start+ksize+vsize > len(p) || start+ksize+vsize < start {
			return false, nil, fmt.Errorf("element %d past the page's end", i)
		}
		el.key, el.value = p[start:start+ksize], p[start+ksize:start+ksize+vsize]
		out = append(out, el)
	}
	return leaf, out, nil
}

// leafOf walks from bucket b's root to the leaf that holds key, or the rightmost leaf when
// key is nil, and returns its elements.
func (db *boltReader) leafOf(b bucket, key []byte) ([]element, error) {
	p, id := b.inline, b.root
	for range boltMaxDepth {
		if p == nil {
			var err error
			if p, err = db.page(id); err != nil {
				return nil, err
			}
		}
		leaf, els, err := elements(p)
		if err != nil {
			return nil, err
		}
		if leaf {
			return els, nil
		}
		if len(els) == 0 {
			return nil, fmt.Errorf("empty branch page")
		}
		// A branch element's key is the least key of its child: the child to follow is the
		// last whose key is not above the one sought.
		next := els[len(els)-1].child
		if key != nil {
			next = els[0].child
			for _, e := range els {
				if bytes.Compare(e.key, key) <= 0 {
					next = e.child
				}
			}
		}
		p, id = nil, next
	}
	return nil, fmt.Errorf("tree deeper than %d levels", boltMaxDepth)
}

// sub is the bucket named name in bucket b; ok is false when there is none.
func (db *boltReader) sub(b bucket, name []byte) (bucket, bool, error) {
	els, err := db.leafOf(b, name)
	if err != nil {
		return bucket{}, false, err
	}
	for _, e := range els {
		if !bytes.Equal(e.key, name) {
			continue
		}
		if e.flags&boltBucketLeaf == 0 || len(e.value) < 16 {
			return bucket{}, false, fmt.Errorf("%s is not a bucket", name)
		}
		sub := bucket{root: binary.LittleEndian.Uint64(e.value)}
		if sub.root == 0 {
			sub.inline = e.value[16:]
		}
		return sub, true, nil
	}
	return bucket{}, false, nil
}

// lastKey is the greatest key of the bucket named name in b.
func (db *boltReader) lastKey(b bucket, name []byte) ([]byte, bool, error) {
	sub, ok, err := db.sub(b, name)
	if err != nil || !ok {
		return nil, false, err
	}
	els, err := db.leafOf(sub, nil)
	if err != nil || len(els) == 0 {
		return nil, false, err
	}
	return els[len(els)-1].key, true, nil
}

// get is the value of key in the bucket named name in b.
func (db *boltReader) get(b bucket, name, key []byte) ([]byte, bool, error) {
	sub, ok, err := db.sub(b, name)
	if err != nil || !ok {
		return nil, false, err
	}
	els, err := db.leafOf(sub, key)
	if err != nil {
		return nil, false, err
	}
	for _, e := range els {
		if bytes.Equal(e.key, key) {
			return e.value, true, nil
		}
	}
	return nil, false, nil
}
