// Package s3 is the client of the S3-compatible bucket an EtcdBackup writes to and a restored
// seed reads from, through minio-go (package objstore describes the bucket). Only the agent
// binary links it, in the pods that move a snapshot, never the operator: the credentials are
// files those pods alone mount, and a snapshot streams through small buffers, or buffers of a
// few parts (PartSize) when it is larger than SinglePutMax.
//
// Errors wrap one of objstore's sentinels when the store's answer says which, with the
// store's own code and message (never the credentials), so that the pod reports why in the
// backup's status.
package s3

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/crc64nvme"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/etcd-operator/etcd-operator/pkg/objstore"
)

// PartSize is the size of each part of an upload, which minio-go holds in memory while it
// sends it: the backup pod's memory is uploadThreads parts, whatever the snapshot's size, and
// 10000 parts (the S3 limit) make 160 GiB, far above etcd's largest database. Left to
// minio-go, a stream of unknown size is cut in parts of over 500 MiB.
const PartSize = 16 << 20

// SinglePutMax is the largest upload of a known size that Put sends in one request. A
// multipart upload costs a store that keeps objects as files (versitygw's posix backend, the
// test store) a copy of the whole object when it is completed, and holds uploadThreads parts
// in the pod's memory; one request costs neither, but cannot be sent again part by part on a
// transient error (the backup's next attempt starts over). Larger snapshots, rare under
// etcd's default 2 GiB quota, go in parts, far below S3's 5 GiB limit of one request.
const SinglePutMax = 1 << 30

// uploadThreads is how many parts of an upload are in memory at once: one read from the
// stream while the others are sent, so that neither the stream nor the store waits for the
// other.
const uploadThreads = 3

// Timeouts of the HTTP client: an endpoint that does not answer fails an attempt within
// seconds instead of the kernel's minutes, and one that stops answering mid-transfer within a
// minute.
const (
	dialTimeout     = 10 * time.Second
	responseTimeout = time.Minute
	// maxRetries is how often minio-go sends a request again on a transient error: its
	// default, 10 with backoff, would hold a backup to an unreachable endpoint for minutes
	// before the attempt even fails.
	maxRetries = 3
)

// Store is one bucket of an S3-compatible store.
type Store struct {
	client *minio.Client
	bucket string
	// secrets are the credentials, kept out of every error's text.
	secrets []string
}

// Open reads the credentials and the CA and returns the bucket's Store. It does not call
// the store.
func Open(c objstore.Config) (*Store, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	id, err := readCredential(c.CredentialsDir, objstore.AccessKeyIDFile)
	if err != nil {
		return nil, err
	}
	secret, err := readCredential(c.CredentialsDir, objstore.SecretAccessKeyFile)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(c.Endpoint)
	transport, err := newTransport(c.CAFile)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupAuto
	if c.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(id, secret, ""), Secure: u.Scheme == "https", Transport: transport,
		Region: c.Region, BucketLookup: lookup, MaxRetries: maxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("configuring the S3 client for %s: %w", c.Endpoint, err)
	}
	return &Store{client: client, bucket: c.Bucket, secrets: []string{id, secret}}, nil
}

func readCredential(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("reading the S3 credentials: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("reading the S3 credentials: %s is empty", name)
	}
	return v, nil
}

func newTransport(caFile string) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = dialTimeout
	t.ResponseHeaderTimeout = responseTimeout
	// minio-go asks for no compression: a snapshot's size and hash are the bytes stored.
	t.DisableCompression = true
	if caFile == "" {
		pool, err := publicRoots()
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		return t, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the S3 endpoint's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the S3 endpoint's CA file %s holds no PEM certificate", caFile)
	}
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// publicRoots are the system's certificate authorities or, where the system has none (the
// operator's image has no CA bundle), the public ones Go's x509roots carries. They are read
// here, in the pods that reach a store, rather than by importing x509roots/fallback, whose
// init would parse them in every process of the binary, the operator's included.
func publicRoots() (*x509.CertPool, error) {
	if pool, err := x509.SystemCertPool(); err == nil && !pool.Equal(x509.NewCertPool()) {
		return pool, nil
	}
	pool := x509.NewCertPool()
	for r := range bundle.Roots() {
		cert, err := x509.ParseCertificate(r.Certificate)
		if err != nil {
			return nil, fmt.Errorf("reading the public certificate authorities: %w", err)
		}
		if r.Constraint == nil {
			pool.AddCert(cert)
		} else {
			pool.AddCertWithConstraint(cert, r.Constraint)
		}
	}
	return pool, nil
}

// Check asks the store for the bucket: wrong credentials, a missing bucket or an endpoint
// that does not answer fail here, before any snapshot is taken.
func (s *Store) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return s.wrap(err, "checking access")
	}
	if !ok {
		return fmt.Errorf("%w: the store has no bucket %s", objstore.ErrBucketNotFound, s.bucket)
	}
	return nil
}

// Put streams r to the object key and returns the bytes stored. size, when not -1, is r's
// length: up to SinglePutMax, r goes in one request of that length, and the store completes
// the object once it has size bytes, so r must hold its last bytes back until it knows them
// good (an error instead of them fails the upload). Otherwise r goes in parts of PartSize,
// the next read while the ones before are sent (uploadThreads at a time), and the upload is
// completed after r's end. The object appears whole or not at all: an upload that fails, on an
// error of r too (the one of its last read included), is aborted before it completes.
//
// The bytes go unsigned (UNSIGNED-PAYLOAD) over http as over https, where minio-go sends them
// so already: signed over http (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), every chunk would cost a
// SHA-256 in the pod and another in the store, on a node that runs etcd too, to guard what TLS
// guards over https. What guards them instead: the caller's own checks (etcd's hash and the
// SHA-256 of the whole, which a restore checks again) and, when the store answers the upload
// with the CRC64NVME of the whole object it stored (versitygw does, in one PUT or in parts;
// AWS S3 documents it for an upload sent without a checksum), the CRC64NVME of the bytes
// sent: an object the store holds otherwise is deleted, and the error wraps
// objstore.ErrChecksumMismatch. No checksum goes with the request: a trailing one
// (aws-chunked) is refused by stores that do not know it.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) (int64, error) {
	sent := crc64nvme.New()
	return s.put(ctx, key, io.TeeReader(r, sent), size, "application/octet-stream", sent)
}

// PutBytes stores b as the object key, as Put does; b is sent again on a transient error.
func (s *Store) PutBytes(ctx context.Context, key string, b []byte) error {
	sent := crc64nvme.New()
	sent.Write(b)
	_, err := s.put(ctx, key, bytes.NewReader(b), int64(len(b)), "text/plain", sent)
	return err
}

// put uploads r; sent is the CRC64NVME of the bytes r gives, once it gave them all.
func (s *Store) put(ctx context.Context, key string, r io.Reader, size int64, contentType string, sent hash.Hash) (int64, error) {
	opts := minio.PutObjectOptions{ContentType: contentType, DisableContentSha256: true}
	single := size >= 0 && size <= SinglePutMax
	if single {
		opts.DisableMultipart = true
	} else {
		size = -1
		opts.PartSize, opts.ConcurrentStreamParts, opts.NumThreads = PartSize, true, uploadThreads
	}
	info, err := s.client.PutObject(ctx, s.bucket, key, r, size, opts)
	if err != nil {
		return 0, s.wrap(err, "uploading %s", key)
	}
	if err := s.checkStored(ctx, key, info, sent.Sum(nil), single); err != nil {
		return 0, err
	}
	return info.Size, nil
}

// checkStored compares the CRC64NVME of the whole object the store answered the upload with,
// if any, with sent, the CRC64NVME of the bytes sent, and deletes the object when they differ.
// A single PUT's is of the whole object unless the store says otherwise; a multipart
// upload's, only when the store says so (FULL_OBJECT, not COMPOSITE: a checksum of the
// parts' checksums).
func (s *Store) checkStored(ctx context.Context, key string, info minio.UploadInfo, sent []byte, single bool) error {
	whole := info.ChecksumMode == minio.ChecksumFullObjectMode.String() || (single && info.ChecksumMode == "")
	if info.ChecksumCRC64NVME == "" || !whole {
		return nil
	}
	stored, err := base64.StdEncoding.DecodeString(info.ChecksumCRC64NVME)
	if err == nil && bytes.Equal(stored, sent) {
		return nil
	}
	err = fmt.Errorf("bucket %s: uploading %s: %w: the store's CRC64NVME of the object is %s, that of the bytes sent %s",
		s.bucket, key, objstore.ErrChecksumMismatch, info.ChecksumCRC64NVME, base64.StdEncoding.EncodeToString(sent))
	if derr := s.Delete(ctx, key); derr != nil {
		err = errors.Join(err, derr)
	}
	return err
}

type object struct {
	*minio.Object
	size int64
	s    *Store
	key  string
}

func (o *object) Size() int64 { return o.size }

func (o *object) Read(p []byte) (int, error) {
	n, err := o.Object.Read(p)
	if err != nil && err != io.EOF {
		err = o.s.wrap(err, "reading %s", o.key)
	}
	return n, err
}

func (o *object) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.Object.ReadAt(p, off)
	if err != nil && err != io.EOF {
		err = o.s.wrap(err, "reading %s at %d", o.key, off)
	}
	return n, err
}

// Open opens the object key for reading; an error wrapping objstore.ErrNotFound when there is none.
func (s *Store) Open(ctx context.Context, key string) (objstore.Object, error) {
	o, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap(err, "opening %s", key)
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		return nil, s.wrap(err, "opening %s", key)
	}
	return &object{Object: o, size: st.Size, s: s, key: key}, nil
}

// Delete deletes the objects keys; one already gone is not an error.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if err := s.client.RemoveObject(ctx, s.bucket, k, minio.RemoveObjectOptions{}); err != nil {
			if err := s.wrap(err, "deleting %s", k); !errors.Is(err, objstore.ErrNotFound) {
				return err
			}
		}
	}
	return nil
}

// wrap names the verb and the store's reason, wrapping the sentinel the answer matches.
func (s *Store) wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	sentinel, msg := classify(err)
	for _, secret := range s.secrets {
		msg = strings.ReplaceAll(msg, secret, "***")
	}
	if sentinel == nil {
		return fmt.Errorf("bucket %s: %s: %s", s.bucket, what, msg)
	}
	return fmt.Errorf("bucket %s: %s: %w: %s", s.bucket, what, sentinel, msg)
}

// classify reads the store's answer: its sentinel, nil when none fits, and the message to
// report.
func classify(err error) (error, string) {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code != "" {
		msg := resp.Code + ": " + resp.Message
		switch resp.Code {
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken",
			"AllAccessDisabled", "AccountProblem", "InvalidSecurity":
			return objstore.ErrAccessDenied, msg
		case "NoSuchBucket":
			return objstore.ErrBucketNotFound, msg
		case "NoSuchKey", "NoSuchObject":
			return objstore.ErrNotFound, msg
		case "QuotaExceeded", "EntityTooLarge", "XMinioStorageFull", "StorageFull":
			return objstore.ErrQuota, msg
		}
		switch resp.StatusCode {
		case http.StatusForbidden:
			return objstore.ErrAccessDenied, msg
		case http.StatusNotFound:
			return objstore.ErrNotFound, msg
		}
		return nil, msg
	}
	var netErr net.Error
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	if errors.As(err, &dnsErr) || errors.As(err, &opErr) || errors.As(err, &certErr) || errors.As(err, &unknownCA) ||
		errors.As(err, &hostErr) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return objstore.ErrUnreachable, err.Error()
	}
	return nil, err.Error()
}
