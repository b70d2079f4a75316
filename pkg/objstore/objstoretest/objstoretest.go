// Package objstoretest runs an in-process S3-compatible store (gofakes3, in memory) for the
// tests of the code that reads and writes snapshots in S3, behind a check of the access key
// ID that gofakes3 does not make itself, so that wrong credentials are refused as a real
// store refuses them. Start serves https with a certificate of its own, given as the CA file
// of Config; StartHTTP serves plain http. gofakes3 stores an upload signed chunk by chunk
// (aws-chunked, what minio-go sends over http unless told not to sign the payload) undecoded.
package objstoretest

import (
	"context"
	"encoding/pem"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-operator/etcd-operator/pkg/objstore"
)

// The credentials the store accepts.
const (
	AccessKeyID     = "AKIDTESTSTORE"
	SecretAccessKey = "test-secret-access-key"
)

// Store is a running in-process store.
type Store struct {
	// URL is the store's endpoint.
	URL     string
	Backend *s3mem.Backend
	// CAFile holds the certificate the store serves.
	CAFile string
	// client trusts the store's certificate.
	client *http.Client
	// onRequest, when set, sees each request before the store serves it.
	onRequest atomic.Pointer[func(*http.Request)]
	// onResponse, when set, may change each answer before it is sent.
	onResponse atomic.Pointer[func(*http.Request, http.Header, []byte) []byte]
}

// Start starts a store with the given buckets, served over https, stopped when the test ends.
func Start(t testing.TB, buckets ...string) *Store {
	t.Helper()
	return start(t, true, buckets)
}

// StartHTTP starts a store with the given buckets, served over plain http, stopped when the
// test ends. Its Config has no CA file.
func StartHTTP(t testing.TB, buckets ...string) *Store {
	t.Helper()
	return start(t, false, buckets)
}

func start(t testing.TB, secure bool, buckets []string) *Store {
	t.Helper()
	backend := s3mem.New()
	for _, b := range buckets {
		if err := backend.CreateBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	faker := gofakes3.New(backend, gofakes3.WithIntegrityCheck(true))
	h := faker.Server()
	s := &Store{Backend: backend}
	serve := func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+AccessKeyID+"/") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code>` +
				`<Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`))
			return
		}
		h.ServeHTTP(w, r)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fn := s.onRequest.Load(); fn != nil {
			(*fn)(r)
		}
		fn := s.onResponse.Load()
		if fn == nil {
			serve(w, r)
			return
		}
		rec := httptest.NewRecorder()
		serve(rec, r)
		body := (*fn)(r, rec.Header(), rec.Body.Bytes())
		maps.Copy(w.Header(), rec.Header())
		if r.Method != http.MethodHead {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	if !secure {
		srv.Start()
		s.URL, s.client = srv.URL, srv.Client()
		return s
	}
	srv.StartTLS()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	s.URL, s.CAFile, s.client = srv.URL, ca, srv.Client()
	return s
}

// OnRequest has fn see each request from now on, before the store serves it (and while fn
// runs, the store does not serve it).
func (s *Store) OnRequest(fn func(*http.Request)) { s.onRequest.Store(&fn) }

// OnResponse has fn see each answer from now on, with its request, before it is sent: it may
// change its headers, and returns its body, as a store that says more than gofakes3 does.
func (s *Store) OnResponse(fn func(req *http.Request, header http.Header, body []byte) []byte) {
	s.onResponse.Store(&fn)
}

// Config is the configuration of bucket on s, with the credentials id and secret written to
// files of a folder of the test's.
func (s *Store) Config(t testing.TB, bucket, id, secret string) objstore.Config {
	t.Helper()
	return objstore.Config{Endpoint: s.URL, Bucket: bucket, PathStyle: true, Region: "us-east-1",
		CredentialsDir: Credentials(t, id, secret), CAFile: s.CAFile}
}

// Credentials writes id and secret as the files of a credentials folder and returns it.
func Credentials(t testing.TB, id, secret string) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range map[string]string{objstore.AccessKeyIDFile: id, objstore.SecretAccessKeyFile: secret} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Keys are the keys of the objects of bucket.
func (s *Store) Keys(t testing.TB, bucket string) []string {
	t.Helper()
	list, err := s.Backend.ListBucket(bucket, nil, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	return keys
}

// Uploads are the keys of the multipart uploads of bucket that were begun and neither
// completed nor aborted; none when no multipart upload was begun.
func (s *Store) Uploads(t testing.TB, bucket string) []string {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	core, err := minio.NewCore(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(AccessKeyID, SecretAccessKey, ""), Secure: u.Scheme == "https",
		Transport: s.client.Transport, Region: "us-east-1", BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.ListMultipartUploads(context.Background(), bucket, "", "", "", "", 1000)
	// gofakes3 answers NoSuchUpload for a bucket where no multipart upload was ever begun.
	if resp := (minio.ErrorResponse{}); errors.As(err, &resp) && resp.Code == "NoSuchUpload" {
		return nil
	}
	if err != nil {
		t.Fatalf("listing the multipart uploads of %s: %v", bucket, err)
	}
	var keys []string
	for _, u := range res.Uploads {
		keys = append(keys, u.Key)
	}
	return keys
}
