package memberinit

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// goodSnapshot is a file that passes the snapshot check: a 4 KiB "database" and its hash.
func goodSnapshot(t *testing.T) string {
	db := make([]byte, 4096)
	for i := range db {
		db[i] = byte(i)
	}
	sum := sha256.Sum256(db)
	path := filepath.Join(t.TempDir(), "good.db")
	if err := os.WriteFile(path, append(db, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
