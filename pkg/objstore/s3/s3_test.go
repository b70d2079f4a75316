package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/minio/crc64nvme"

	"github.com/etcd-operator/etcd-operator/pkg/objstore"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/objstoretest"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/s3"
)

func open(t *testing.T, c objstore.Config) *s3.Store {
	t.Helper()
	s, err := s3.Open(c)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// A stream of unknown size, over one part, is stored whole, reads back the same as a stream
// and at offsets, and is deleted, twice without error.
func TestPutOpenDelete(t *testing.T) {
	srv := objstoretest.Start(t, "backups")
	s := open(t, srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey))
	ctx := context.Background()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	data := make([]byte, s3.PartSize+12345)
	rand.Read(data)
	// A reader that hides its size, as etcd's snapshot stream does.
	n, err := s.Put(ctx, "ns/a.db", io.MultiReader(bytes.NewReader(data)), -1)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put: %d bytes, %v; want %d", n, err, len(data))
	}
	o, err := s.Open(ctx, "ns/a.db")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer o.Close()
	got, err := io.ReadAll(o)
	if err != nil || !bytes.Equal(got, data) || o.Size() != int64(len(data)) {
		t.Fatalf("read back %d bytes (size %d), %v: not the %d bytes put", len(got), o.Size(), err, len(data))
	}
	at := make([]byte, 100)
	if _, err := o.ReadAt(at, s3.PartSize-50); err != nil || !bytes.Equal(at, data[s3.PartSize-50:s3.PartSize+50]) {
		t.Fatalf("ReadAt across the parts: %v", err)
	}
	if err := s.Delete(ctx, "ns/a.db", "ns/never.db"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Open(ctx, "ns/a.db"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Open after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "ns/a.db"); err != nil {
		t.Fatalf("Delete again: %v", err)
	}
}

// Each failure a backup reports is told apart, with the store's words and without the
// credentials.
func TestFailuresAreClassified(t *testing.T) {
	srv := objstoretest.Start(t, "backups")
	ctx := context.Background()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + closed.Addr().String()
	closed.Close()
	untrusted := srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey)
	untrusted.CAFile = ""
	for _, tc := range []struct {
		name     string
		config   objstore.Config
		sentinel error
		words    string
	}{
		{"wrong credentials", srv.Config(t, "backups", "AKIDWRONG", "wrong-secret"), objstore.ErrAccessDenied, "AccessDenied"},
		{"no such bucket", srv.Config(t, "missing", objstoretest.AccessKeyID, objstoretest.SecretAccessKey), objstore.ErrBucketNotFound, "missing"},
		{"a certificate not trusted", untrusted, objstore.ErrUnreachable, "certificate"},
		{"an endpoint that does not answer", objstore.Config{Endpoint: unreachable, Bucket: "backups", Region: "us-east-1", PathStyle: true,
			CredentialsDir: objstoretest.Credentials(t, "AKIDWRONG", "wrong-secret")}, objstore.ErrUnreachable, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tc.config)
			start := time.Now()
			err := s.Check(ctx)
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("Check: %v; want %v with %q", err, tc.sentinel, tc.words)
			}
			if strings.Contains(err.Error(), "wrong-secret") || strings.Contains(err.Error(), "AKIDWRONG") {
				t.Errorf("the error quotes the credentials: %v", err)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("Check took %s", d)
			}
		})
	}
	s := open(t, srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey))
	if _, err := s.Open(ctx, "nowhere.db"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Open of no object: %v, want ErrNotFound", err)
	}
}

// Missing or empty credential files and endpoints with a path are refused before any call.
func TestOpenRefusesBadConfig(t *testing.T) {
	good := objstore.Config{Endpoint: "https://s3.example.com", Bucket: "b", CredentialsDir: objstoretest.Credentials(t, "id", "secret")}
	if _, err := s3.Open(good); err != nil {
		t.Fatalf("Open: %v", err)
	}
	for name, c := range map[string]objstore.Config{
		"a path":              {Endpoint: "https://s3.example.com/b", Bucket: "b", CredentialsDir: good.CredentialsDir},
		"no scheme":           {Endpoint: "s3.example.com", Bucket: "b", CredentialsDir: good.CredentialsDir},
		"no credentials":      {Endpoint: "https://s3.example.com", Bucket: "b", CredentialsDir: t.TempDir()},
		"an empty credential": {Endpoint: "https://s3.example.com", Bucket: "b", CredentialsDir: objstoretest.Credentials(t, "", "secret")},
	} {
		if _, err := s3.Open(c); err == nil {
			t.Errorf("%s: Open accepted %+v", name, c)
		}
	}
	// Args renders what AddFlags reads.
	c := good
	c.Region, c.PathStyle, c.CAFile = "eu-west-3", true, "/ca.crt"
	if got := strings.Join(c.Args(), " "); got != "--s3-endpoint=https://s3.example.com --s3-bucket=b --s3-credentials-dir="+
		good.CredentialsDir+" --s3-region=eu-west-3 --s3-path-style --s3-ca-file=/ca.crt" {
		t.Errorf("Args: %s", got)
	}
}

// readsPast reads r and closes reached once more than at bytes have been asked of it.
type readsPast struct {
	r       io.Reader
	at, n   int64
	reached chan struct{}
	once    sync.Once
}

func (p *readsPast) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if p.n += int64(n); p.n > p.at {
		p.once.Do(func() { close(p.reached) })
	}
	return n, err
}

// partHold bounds how long the store holds the first part waiting for the stream to be read
// past it: far longer than reading a part from memory takes.
const partHold = 20 * time.Second

// Put reads the stream's next part while the store is still taking the one before: the stream
// and the store work at once instead of in turn. The store holds the first part until the
// stream has been read past it.
func TestPutReadsTheNextPartWhileItSends(t *testing.T) {
	srv := objstoretest.Start(t, "backups")
	s := open(t, srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey))
	data := make([]byte, 2*s3.PartSize+12345)
	rand.Read(data)
	r := &readsPast{r: bytes.NewReader(data), at: s3.PartSize, reached: make(chan struct{})}
	var waited atomic.Bool
	srv.OnRequest(func(req *http.Request) {
		if req.Method != http.MethodPut || req.URL.Query().Get("partNumber") != "1" {
			return
		}
		select {
		case <-r.reached:
		case <-time.After(partHold):
			waited.Store(true)
		}
	})
	n, err := s.Put(context.Background(), "ns/a.db", r, -1)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put: %d bytes, %v; want %d", n, err, len(data))
	}
	if waited.Load() {
		t.Errorf("the stream was not read past the first part while the store held it for %s", partHold)
	}
}

// requests records the method and query of each request the store serves from now on.
func requests(srv *objstoretest.Store) func() []string {
	var mu sync.Mutex
	var seen []string
	srv.OnRequest(func(req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, req.Method+" "+req.URL.RawQuery)
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// A stream of a known size, over several parts' worth, goes in one request, and reads back
// whole: no multipart upload is begun, none is completed.
func TestPutOfAKnownSizeIsOneRequest(t *testing.T) {
	srv := objstoretest.Start(t, "backups")
	s := open(t, srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey))
	data := make([]byte, 2*s3.PartSize+12345)
	rand.Read(data)
	seen := requests(srv)
	n, err := s.Put(context.Background(), "ns/a.db", io.MultiReader(bytes.NewReader(data)), int64(len(data)))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put: %d bytes, %v; want %d", n, err, len(data))
	}
	if got := seen(); len(got) != 1 || got[0] != "PUT " {
		t.Errorf("requests: %q; want one PUT of the object", got)
	}
	o, err := s.Open(context.Background(), "ns/a.db")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer o.Close()
	if got, err := io.ReadAll(o); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v: not the %d bytes put", len(got), err, len(data))
	}
}

// errInstead is the error a stream gives instead of its last bytes.
var errInstead = errors.New("the stream failed its check")

// An upload of a known size whose stream fails instead of giving its last bytes, or ends short
// of its size, stores nothing: the store never had the whole of it.
func TestPutOfAKnownSizeNeverCompletesAFailedStream(t *testing.T) {
	srv := objstoretest.Start(t, "backups")
	s := open(t, srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey))
	data := make([]byte, s3.PartSize+12345)
	rand.Read(data)
	for name, r := range map[string]io.Reader{
		"an error instead of the last bytes": io.MultiReader(bytes.NewReader(data[:len(data)-32]), iotest.ErrReader(errInstead)),
		"ended short":                        bytes.NewReader(data[:len(data)-32]),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Put(context.Background(), "ns/"+name, r, int64(len(data))); err == nil {
				t.Fatal("Put succeeded")
			}
			if keys, uploads := srv.Keys(t, "backups"), srv.Uploads(t, "backups"); len(keys)+len(uploads) != 0 {
				t.Errorf("left in the bucket: objects %v, multipart uploads %v", keys, uploads)
			}
		})
	}
}

// Over plain http, every upload sends its bytes unsigned (UNSIGNED-PAYLOAD), as over https,
// not signed chunk by chunk: one PUT, the parts of a multipart upload, and PutBytes. The store
// has the bytes as sent (gofakes3 would keep a signed upload's chunk signatures in them).
func TestPutOverHTTPIsUnsigned(t *testing.T) {
	srv := objstoretest.StartHTTP(t, "backups")
	s := open(t, srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey))
	var mu sync.Mutex
	payloads := map[string]bool{}
	srv.OnRequest(func(req *http.Request) {
		if req.Method == http.MethodPut {
			mu.Lock()
			defer mu.Unlock()
			payloads[req.Header.Get("X-Amz-Content-Sha256")] = true
		}
	})
	ctx := context.Background()
	data := make([]byte, s3.PartSize+12345)
	rand.Read(data)
	if _, err := s.Put(ctx, "one.db", io.MultiReader(bytes.NewReader(data)), int64(len(data))); err != nil {
		t.Fatalf("Put of a known size: %v", err)
	}
	if _, err := s.Put(ctx, "parts.db", io.MultiReader(bytes.NewReader(data)), -1); err != nil {
		t.Fatalf("Put of an unknown size: %v", err)
	}
	if err := s.PutBytes(ctx, "one.db.sha256", []byte("sum\n")); err != nil {
		t.Fatalf("PutBytes: %v", err)
	}
	if want := map[string]bool{"UNSIGNED-PAYLOAD": true}; !maps.Equal(payloads, want) {
		t.Errorf("x-amz-content-sha256 of the uploads: %v, want only UNSIGNED-PAYLOAD", slices.Collect(maps.Keys(payloads)))
	}
	for key, want := range map[string][]byte{"one.db": data, "parts.db": data, "one.db.sha256": []byte("sum\n")} {
		o, err := s.Open(ctx, key)
		if err != nil {
			t.Fatalf("Open %s: %v", key, err)
		}
		got, err := io.ReadAll(o)
		o.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s reads back as %d bytes (%v), not the %d bytes put", key, len(got), err, len(want))
		}
	}
}

// crc64 is the CRC64NVME of b as a store answers it.
func crc64(b []byte) string {
	h := crc64nvme.New()
	h.Write(b)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// A store that answers an upload with the CRC64NVME of bytes other than those sent holds an
// object other than the one sent: Put fails, with ErrChecksumMismatch, and deletes it. One that
// answers the CRC64NVME of the bytes sent keeps it. In one PUT, the store answers it in a
// header; in parts, in the answer to the upload's completion, where only one of the whole
// object (FULL_OBJECT) is compared, not one of the parts' checksums (COMPOSITE).
func TestPutChecksTheStoresCRC64NVME(t *testing.T) {
	srv := objstoretest.StartHTTP(t, "backups")
	s := open(t, srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey))
	data := make([]byte, 1<<20)
	rand.Read(data)
	for _, tc := range []struct {
		name         string
		size         int64
		answer, mode string
		err          error
	}{
		{"one PUT, the bytes sent", int64(len(data)), crc64(data), "", nil},
		{"one PUT, other bytes", int64(len(data)), crc64(data[1:]), "", objstore.ErrChecksumMismatch},
		{"one PUT, other bytes, of the whole object", int64(len(data)), crc64(data[1:]), "FULL_OBJECT", objstore.ErrChecksumMismatch},
		{"one PUT, not base64", int64(len(data)), "?", "", objstore.ErrChecksumMismatch},
		{"parts, the bytes sent", -1, crc64(data), "FULL_OBJECT", nil},
		{"parts, other bytes", -1, crc64(data[1:]), "FULL_OBJECT", objstore.ErrChecksumMismatch},
		{"parts, other bytes, of the parts' checksums", -1, crc64(data[1:]), "COMPOSITE", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.OnResponse(func(req *http.Request, h http.Header, body []byte) []byte {
				switch {
				case req.Method == http.MethodPut && !req.URL.Query().Has("partNumber"):
					h.Set("X-Amz-Checksum-Crc64nvme", tc.answer)
					if tc.mode != "" {
						h.Set("X-Amz-Checksum-Type", tc.mode)
					}
				case req.Method == http.MethodPost && req.URL.Query().Has("uploadId"):
					end := []byte("</CompleteMultipartUploadResult>")
					if !bytes.Contains(body, end) {
						t.Errorf("the answer to the completion is %q", body)
					}
					return bytes.Replace(body, end, []byte("<ChecksumCRC64NVME>"+tc.answer+"</ChecksumCRC64NVME><ChecksumType>"+
						tc.mode+"</ChecksumType>"+string(end)), 1)
				}
				return body
			})
			_, err := s.Put(context.Background(), "a.db", io.MultiReader(bytes.NewReader(data)), tc.size)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("Put: %v, want %v", err, tc.err)
			}
			if keys := srv.Keys(t, "backups"); (tc.err == nil) != slices.Equal(keys, []string{"a.db"}) {
				t.Errorf("objects after Put: %v", keys)
			}
			if err := s.Delete(context.Background(), "a.db"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
