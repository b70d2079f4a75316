package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/objstore"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/objstoretest"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/s3"
)

// The agent hands TakeS3 and memberinit.Fetch an s3.Store.
var _ Store = (*s3.Store)(nil)

func openStore(t *testing.T, srv *objstoretest.Store, bucket, id string) *s3.Store {
	t.Helper()
	st, err := s3.Open(srv.Config(t, bucket, id, objstoretest.SecretAccessKey))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// objectBytes is the whole object key.
func objectBytes(t *testing.T, st Store, key string) []byte {
	t.Helper()
	return readWhole(t, key)(st.Open(context.Background(), key))
}

// A snapshot streamed to S3 is the object <prefix>/<name>.db, verified, with its SHA-256
// beside it, and reported as Take reports a file: the same revision, size and hash as the
// bytes stored. Over https and over plain http alike.
func TestTakeS3WritesAVerifiedObject(t *testing.T) {
	members := etcdtest.StartCluster(t, 3)
	rev := put(t, members[0].ClientURL, 0, 20)
	for name, start := range map[string]func(testing.TB, ...string) *objstoretest.Store{
		"https": objstoretest.Start, "http": objstoretest.StartHTTP,
	} {
		t.Run(name, func(t *testing.T) {
			srv := start(t, "backups")
			st := openStore(t, srv, "backups", objstoretest.AccessKeyID)
			res, err := TakeS3(context.Background(), Options{Members: endpointsOf(members), Path: "etcd/ns", Name: "c-b"}, st,
				etcdutil.NewFactory(0, 0), quietLog())
			if err != nil {
				t.Fatalf("TakeS3: %v", err)
			}
			if res.Location != "etcd/ns/c-b.db" || res.Revision != rev || res.EtcdVersion == "" || res.Member == "" {
				t.Errorf("result %+v, want location etcd/ns/c-b.db at revision %d", res, rev)
			}
			data := objectBytes(t, st, res.Location)
			checked, err := VerifyReader(bytes.NewReader(data), res.Location)
			if err != nil || checked.SizeBytes != res.SizeBytes || checked.SHA256 != res.SHA256 {
				t.Errorf("the object is %+v (%v); reported %+v", checked, err, res)
			}
			if got, want := string(objectBytes(t, st, SumKey(res.Location))), res.SHA256+"  c-b.db\n"; got != want {
				t.Errorf("%s holds %q, want %q", SumKey(res.Location), got, want)
			}
		})
	}
}

// A store that says it holds bytes other than those sent (its CRC64NVME of the object is
// not theirs): the backup fails as corrupt, and leaves no object. Over plain http, where the
// snapshot goes unsigned.
func TestTakeS3RefusesAnObjectTheStoreChecksumsOtherwise(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	put(t, members[0].ClientURL, 0, 20)
	srv := objstoretest.StartHTTP(t, "backups")
	srv.OnResponse(func(req *http.Request, h http.Header, body []byte) []byte {
		if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, ".db") {
			h.Set("X-Amz-Checksum-Crc64nvme", "AAAAAAAAAAA=")
		}
		return body
	})
	st := openStore(t, srv, "backups", objstoretest.AccessKeyID)
	_, err := TakeS3(context.Background(), Options{Members: endpointsOf(members), Name: "c-b"}, st, etcdutil.NewFactory(0, 0), quietLog())
	var f *Failure
	if !errors.As(err, &f) || f.Reason != FailureCorrupt || !errors.Is(err, objstore.ErrChecksumMismatch) {
		t.Fatalf("TakeS3 = %v, want a %s failure on the store's checksum", err, FailureCorrupt)
	}
	if keys := srv.Keys(t, "backups"); len(keys) != 0 {
		t.Errorf("objects left: %v", keys)
	}
}

// What the backup pod reports of a store it cannot use: the store's reason, before any
// member is asked (the members here do not exist), and no object.
func TestTakeS3Failures(t *testing.T) {
	srv := objstoretest.Start(t, "backups")
	nobody := []Endpoint{{Name: "c-0", URL: "http://127.0.0.1:1"}}
	for _, tc := range []struct {
		name   string
		st     *s3.Store
		reason FailureReason
	}{
		{"wrong credentials", openStore(t, srv, "backups", "AKIDWRONG"), FailureAccessDenied},
		{"no such bucket", openStore(t, srv, "missing", objstoretest.AccessKeyID), FailureBucketNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TakeS3(context.Background(), Options{Members: nobody, Name: "c-b"}, tc.st, etcdutil.NewFactory(0, 0), quietLog())
			var f *Failure
			if !errors.As(err, &f) || f.Reason != tc.reason {
				t.Fatalf("TakeS3 = %v, want a %s failure", err, tc.reason)
			}
			if rep := ReportOf(Result{}, err); rep.Reason != tc.reason || rep.Message == "" {
				t.Errorf("report %+v", rep)
			}
		})
	}
	if keys := srv.Keys(t, "backups"); len(keys) != 0 {
		t.Errorf("objects written: %v", keys)
	}
}

// RevisionAt, reading bbolt's pages itself at offsets, finds the revision bbolt finds in the
// same snapshots: of a small database, of one whose key bucket spans many pages, and of one
// whose last compaction is above its last key.
func TestRevisionAtAgreesWithBolt(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	url := members[0].ClientURL
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	snap := func(name string) string {
		t.Helper()
		root := t.TempDir()
		res, err := Take(ctx, Options{Members: endpointsOf(members), Root: root, Name: name}, etcdutil.NewFactory(0, 0), quietLog())
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(root, res.Location)
	}
	files := map[string]string{"empty": snap("empty")}
	put(t, url, 0, 10)
	files["small"] = snap("small")
	value := strings.Repeat("v", 2000)
	for i := range 3000 {
		if _, err := cli.Put(ctx, fmt.Sprintf("big%05d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	files["many pages"] = snap("big")
	resp, err := cli.Delete(ctx, "big", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	files["compacted"] = snap("compacted")
	for name, file := range files {
		want, err := boltRevision(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		got, err := RevisionAt(f, st.Size()-sha256.Size)
		f.Close()
		if err != nil || got != want {
			t.Errorf("%s (%d bytes): RevisionAt = %d, %v; bbolt reads %d", name, st.Size(), got, err, want)
		}
	}
	// A database whose pages are damaged is corrupt, not a revision.
	b, _ := os.ReadFile(files["many pages"])
	for i := 2 * 4096; i < len(b)-sha256.Size; i++ {
		b[i] = 0xff
	}
	if _, err := RevisionAt(bytes.NewReader(b), int64(len(b)-sha256.Size)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("RevisionAt of damaged pages = %v, want ErrCorrupt", err)
	}
}
