package snapshot

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// boltOpenTimeout bounds the wait for bbolt's file lock, which nothing else holds.
const boltOpenTimeout = 10 * time.Second

// boltRevision reads the revision of a snapshot file as RevisionAt does, with bbolt itself
// (read-only): the reference RevisionAt is checked against.
func boltRevision(path string) (int64, error) {
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
