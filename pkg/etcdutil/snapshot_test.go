package etcdutil_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// The size a snapshot stream announces is its length, the database's hash included, for a
// database sent in one message and in many; the stream ends with the SHA-256 of the database
// before it.
func TestSnapshotAnnouncesItsSize(t *testing.T) {
	m := etcdtest.StartCluster(t, 1)[0]
	raw := rawClient(t, m.ClientURL)
	for _, tc := range []struct {
		name      string
		keys, val int
	}{
		{"an empty database", 0, 0},
		{"a database of many messages", 300, 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.keys {
				if _, err := raw.Put(context.Background(), fmt.Sprintf("k%05d", i), strings.Repeat("v", tc.val)); err != nil {
					t.Fatal(err)
				}
			}
			s, err := etcdutil.OpenSnapshot(context.Background(), m.ClientURL, etcdutil.ConnConfig{})
			if err != nil {
				t.Fatalf("OpenSnapshot: %v", err)
			}
			got, err := io.ReadAll(s)
			if err != nil {
				t.Fatalf("reading the snapshot: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if s.Size() != int64(len(got)) {
				t.Errorf("the stream announced %d bytes and held %d", s.Size(), len(got))
			}
			db := got[:max(len(got)-sha256.Size, 0)]
			if sum := sha256.Sum256(db); len(db) == 0 || !bytes.Equal(got[len(db):], sum[:]) {
				t.Errorf("the stream (%d bytes) is not a database followed by its SHA-256", len(got))
			}
		})
	}
}
