//go:build linux

package snapshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
	"unsafe"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/objstore"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/objstoretest"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/s3"
)

// fewPages bounds what reading a snapshot's revision may read of it: the two meta pages and
// two root-to-leaf paths of trees a few levels deep, of etcd's 4 KiB pages.
const fewPages = 32 * 4096

// streams counts the snapshot streams opened through it and the bytes read from them; it
// serves data when set, the member's snapshot otherwise.
type streams struct {
	data []byte
	// dataErr serves data with io.EOF returned with its last bytes, as some readers do.
	dataErr bool
	// announce, when not 0, is the size the streams announce instead of their own: -1 for a
	// size unknown.
	announce int64

	mu     sync.Mutex
	opened int
	read   int64
}

func (s *streams) open(ctx context.Context, endpoint string, conn etcdutil.ConnConfig) (snapshotStream, error) {
	s.mu.Lock()
	s.opened++
	s.mu.Unlock()
	c := &countedStream{s: s, size: int64(len(s.data))}
	switch {
	case s.data == nil:
		in, err := etcdutil.OpenSnapshot(ctx, endpoint, conn)
		if err != nil {
			return nil, err
		}
		c.ReadCloser, c.size = in, in.Size()
	case s.dataErr:
		c.ReadCloser = io.NopCloser(iotest.DataErrReader(bytes.NewReader(s.data)))
	default:
		c.ReadCloser = io.NopCloser(bytes.NewReader(s.data))
	}
	if s.announce != 0 {
		c.size = s.announce
	}
	return c, nil
}

type countedStream struct {
	io.ReadCloser
	s    *streams
	size int64
}

func (c *countedStream) Size() int64 { return c.size }

func (c *countedStream) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.s.mu.Lock()
	c.s.read += int64(n)
	c.s.mu.Unlock()
	return n, err
}

// watchOpens counts, from now on, the opens of each file of dir (inotify): whoever opens it,
// through whatever API. The returned function reads the counts so far.
func watchOpens(t *testing.T, dir string) func() map[string]int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	// The close events keep two opens apart: inotify merges an event into an identical one
	// just before it.
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_CLOSE_WRITE|unix.IN_CLOSE_NOWRITE); err != nil {
		t.Fatalf("inotify: %v", err)
	}
	opens := map[string]int{}
	return func() map[string]int {
		t.Helper()
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EAGAIN) {
				return opens
			}
			if err != nil {
				t.Fatalf("reading inotify events: %v", err)
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
					t.Fatal("inotify's queue overflowed: opens went uncounted")
				}
				if ev.Mask&unix.IN_OPEN != 0 {
					opens[name]++
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// fill writes n keys of value bytes each, so that the database spans many pages.
func fill(t *testing.T, url string, n, value int) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	v := strings.Repeat("v", value)
	for i := range n {
		if _, err := cli.Put(context.Background(), fmt.Sprintf("fill%05d", i), v); err != nil {
			t.Fatal(err)
		}
	}
}

// A good snapshot is read once, from the member: the stream is opened once and read to its
// end, and the file, checked on its way in, is opened only to be created. The revision comes
// from the file's pages, and is the one bbolt reads; the time reported is the call's. The
// snapshot is larger than writeBehindChunk, so that the file is written behind as a large one
// is.
func TestTakeReadsTheSnapshotOnce(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	fill(t, members[0].ClientURL, 2500, 4000)
	rev := put(t, members[0].ClientURL, 0, 3)
	root := t.TempDir()
	opens := watchOpens(t, root)
	s := &streams{}
	called := time.Now()
	res, err := Take(context.Background(), Options{Members: endpointsOf(members), Root: root, Name: "c-b", stream: s.open},
		etcdutil.NewFactory(0, 0), quietLog())
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if took := time.Since(called).Seconds(); res.Seconds <= 0 || res.Seconds > took {
		t.Errorf("reported %gs taken, of the %gs the call took", res.Seconds, took)
	}
	if s.opened != 1 || s.read != res.SizeBytes || res.SizeBytes <= writeBehindChunk {
		t.Errorf("the stream was opened %d times and %d bytes read; want once, its %d bytes (over %d)",
			s.opened, s.read, res.SizeBytes, writeBehindChunk)
	}
	if got := opens(); got[PartFile("c-b")] != 1 || got[filepath.Base(res.Location)] != 0 {
		t.Errorf("opens of the files: %v; want the temporary file's creation alone", got)
	}
	file := filepath.Join(root, res.Location)
	want, err := boltRevision(file)
	if err != nil || res.Revision != want || res.Revision != rev {
		t.Errorf("revision %d; bbolt reads %d (%v), the last put was %d", res.Revision, want, err, rev)
	}
	b, err := os.ReadFile(file)
	if err != nil || int64(len(b)) != res.SizeBytes || fmt.Sprintf("%x", sha256.Sum256(b)) != res.SHA256 {
		t.Errorf("the file is %d bytes of SHA-256 %x (%v); reported %+v", len(b), sha256.Sum256(b), err, res)
	}
	if _, err := Verify(file); err != nil {
		t.Errorf("Verify of the file written: %v", err)
	}
}

// corruptions are a good snapshot spoiled the ways a stream can be: a byte flipped in the
// middle, cut short, or ended by a hash that is not its database's.
func corruptions(good []byte) map[string][]byte {
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	wrongHash := bytes.Clone(good)
	wrongHash[len(wrongHash)-1] ^= 0xff
	return map[string][]byte{
		"a flipped byte":   flipped,
		"truncated":        good[:len(good)-4096],
		"a wrong hash":     wrongHash,
		"the hash cut off": good[:len(good)-sha256.Size],
	}
}

// memberSnapshot is the member's snapshot, whole.
func memberSnapshot(t *testing.T, url string) []byte {
	t.Helper()
	return readWhole(t, "the snapshot of "+url)(etcdutil.OpenSnapshot(context.Background(), url, etcdutil.ConnConfig{}))
}

// readWhole reads and closes what an opening gave, whole; what names it in a failure.
func readWhole(t *testing.T, what string) func(io.ReadCloser, error) []byte {
	return func(in io.ReadCloser, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatalf("opening %s: %v", what, err)
		}
		defer in.Close()
		b, err := io.ReadAll(in)
		if err != nil {
			t.Fatalf("reading %s: %v", what, err)
		}
		return b
	}
}

// A corrupt stream fails the check as it ends, in the one pass that writes it: the temporary
// file is not opened again, and nothing is left in the folder.
func TestTakeRefusesACorruptStreamInItsOnePass(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	put(t, members[0].ClientURL, 0, 50)
	for name, data := range corruptions(memberSnapshot(t, members[0].ClientURL)) {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			opens := watchOpens(t, root)
			s := &streams{data: data}
			_, err := Take(context.Background(), Options{Members: endpointsOf(members), Root: root, Name: "c-b", stream: s.open},
				etcdutil.NewFactory(0, 0), quietLog())
			var f *Failure
			if !errors.As(err, &f) || f.Reason != FailureCorrupt || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Take = %v, want a SnapshotCorrupt failure", err)
			}
			if s.opened != 1 || s.read != int64(len(data)) {
				t.Errorf("the stream was opened %d times, %d of its %d bytes read", s.opened, s.read, len(data))
			}
			if got := opens(); got[PartFile("c-b")] != 1 || len(got) != 1 {
				t.Errorf("opens of the files: %v; want the temporary file's creation alone", got)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Errorf("left in the folder: %v", entries)
			}
		})
	}
}

// countingStore counts what TakeS3 asks of a store: the uploads that completed, the objects
// opened and what was read of them, as a stream and at offsets.
type countingStore struct {
	Store
	mu                sync.Mutex
	completed, opened int
	read, readAt      int64
}

func (c *countingStore) Put(ctx context.Context, key string, r io.Reader, size int64) (int64, error) {
	n, err := c.Store.Put(ctx, key, r, size)
	if err == nil {
		c.mu.Lock()
		c.completed++
		c.mu.Unlock()
	}
	return n, err
}

func (c *countingStore) Open(ctx context.Context, key string) (objstore.Object, error) {
	o, err := c.Store.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.opened++
	c.mu.Unlock()
	return &countedObject{Object: o, c: c}, nil
}

type countedObject struct {
	objstore.Object
	c *countingStore
}

func (o *countedObject) Read(p []byte) (int, error) {
	n, err := o.Object.Read(p)
	o.c.mu.Lock()
	o.c.read += int64(n)
	o.c.mu.Unlock()
	return n, err
}

func (o *countedObject) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.Object.ReadAt(p, off)
	o.c.mu.Lock()
	o.c.readAt += int64(n)
	o.c.mu.Unlock()
	return n, err
}

// A good snapshot streamed to S3 is read once, from the member: the object is never read back
// as a stream, only the few pages of its revision at offsets; the time reported is the call's.
// In one request, the size the member announced, and in parts, the size unknown.
func TestTakeS3ReadsTheSnapshotOnce(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	fill(t, members[0].ClientURL, 600, 4000)
	rev := put(t, members[0].ClientURL, 0, 3)
	srv := objstoretest.Start(t, "backups")
	for name, announce := range map[string]int64{"in one request": 0, "in parts": -1} {
		t.Run(name, func(t *testing.T) {
			st := &countingStore{Store: openStore(t, srv, "backups", objstoretest.AccessKeyID)}
			s := &streams{announce: announce}
			called := time.Now()
			res, err := TakeS3(context.Background(), Options{Members: endpointsOf(members), Name: "c-b", stream: s.open}, st,
				etcdutil.NewFactory(0, 0), quietLog())
			if err != nil {
				t.Fatalf("TakeS3: %v", err)
			}
			if took := time.Since(called).Seconds(); res.Seconds <= 0 || res.Seconds > took {
				t.Errorf("reported %gs taken, of the %gs the call took", res.Seconds, took)
			}
			if s.opened != 1 || s.read != res.SizeBytes {
				t.Errorf("the stream was opened %d times and %d bytes read; want once, its %d bytes", s.opened, s.read, res.SizeBytes)
			}
			if st.read != 0 || st.readAt > fewPages || res.SizeBytes < 8*fewPages {
				t.Errorf("read back %d bytes as a stream and %d at offsets of %d; want none and a few pages", st.read, st.readAt, res.SizeBytes)
			}
			if res.Revision != rev {
				t.Errorf("revision %d, want %d", res.Revision, rev)
			}
			data := objectBytes(t, st.Store, res.Location)
			if int64(len(data)) != res.SizeBytes || fmt.Sprintf("%x", sha256.Sum256(data)) != res.SHA256 {
				t.Errorf("the object is %d bytes of SHA-256 %x; reported %+v", len(data), sha256.Sum256(data), res)
			}
			if _, err := VerifyReader(bytes.NewReader(data), res.Location); err != nil {
				t.Errorf("VerifyReader of the object: %v", err)
			}
		})
	}
}

// synthetic is a stream of the shape of a snapshot over two parts of an upload: random
// sectors followed by their SHA-256.
func synthetic() []byte {
	db := make([]byte, s3.PartSize+100*sectorSize)
	rand.Read(db)
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

// A corrupt stream fails the upload before it completes: no object, no multipart upload
// left, nothing read back. In one request (the size announced) and in parts (the size
// unknown); over more than one part too, and when the stream ends with a part, the check's
// error coming with the part's last bytes. A good snapshot that runs past the size its
// stream announced, or ends short of it, fails the same way.
func TestTakeS3NeverCompletesACorruptStream(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	put(t, members[0].ClientURL, 0, 50)
	cases := map[string]*streams{}
	good := memberSnapshot(t, members[0].ClientURL)
	for name, data := range corruptions(good) {
		cases[name+", in one request"] = &streams{data: data}
		cases[name+", in parts"] = &streams{data: data, announce: -1}
	}
	cases["running past the size announced"] = &streams{data: good, announce: int64(len(good) - sectorSize)}
	cases["ending short of the size announced"] = &streams{data: good, announce: int64(len(good) + sectorSize)}
	big := synthetic()
	cases["a wrong hash, in one request"] = &streams{data: corruptions(big)["a wrong hash"]}
	cases["a wrong hash, over two parts"] = &streams{data: corruptions(big)["a wrong hash"], announce: -1}
	cases["cut at a part's end, the error with its last bytes"] = &streams{data: big[:s3.PartSize], dataErr: true, announce: -1}
	srv := objstoretest.Start(t, "backups")
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			st := &countingStore{Store: openStore(t, srv, "backups", objstoretest.AccessKeyID)}
			_, err := TakeS3(context.Background(), Options{Members: endpointsOf(members), Name: "c-b", stream: s.open}, st,
				etcdutil.NewFactory(0, 0), quietLog())
			var f *Failure
			if !errors.As(err, &f) || f.Reason != FailureCorrupt {
				t.Fatalf("TakeS3 = %v, want a SnapshotCorrupt failure", err)
			}
			if st.completed != 0 || st.opened != 0 {
				t.Errorf("%d uploads completed, %d objects opened; want none", st.completed, st.opened)
			}
			if keys, uploads := srv.Keys(t, "backups"), srv.Uploads(t, "backups"); len(keys)+len(uploads) != 0 {
				t.Errorf("left in the bucket: objects %v, multipart uploads %v", keys, uploads)
			}
		})
	}
}
