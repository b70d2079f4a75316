// Package objstore is the S3-compatible object store an EtcdBackup writes to and a restored
// seed reads from, through minio-go. Only the pods that move a snapshot use it, never the
// operator: the credentials are files those pods alone mount, and a snapshot streams through
// buffers of a few parts (PartSize), whatever its size.
//
// Errors wrap one of the sentinels below when the store's answer says which, with the store's
// own code and message (never the credentials), so that the pod reports why in the backup's
// status.
package objstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Why a call to the store failed, when its answer says.
var (
	// ErrAccessDenied: the store refused the credentials, or refused them this bucket.
	ErrAccessDenied = errors.New("access denied")
	// ErrBucketNotFound: the store has no such bucket.
	ErrBucketNotFound = errors.New("bucket not found")
	// ErrNotFound: the bucket has no such object.
	ErrNotFound = errors.New("object not found")
	// ErrUnreachable: the store did not answer (name, connection, timeout, certificate).
	ErrUnreachable = errors.New("store unreachable")
	// ErrQuota: the store refused the object for its size (a quota, a full disk).
	ErrQuota = errors.New("store full")
)

// PartSize is the size of each part of an upload, which minio-go holds in memory while it
// sends it: the backup pod's memory is uploadThreads parts, whatever the snapshot's size, and
// 10000 parts (the S3 limit) make 160 GiB, far above etcd's largest database. Left to
// minio-go, a stream of unknown size is cut in parts of over 500 MiB.
const PartSize = 16 << 20

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

// Config is how to reach a bucket: the flags of the pods that use it.
type Config struct {
	// Endpoint is the store's URL, http:// or https://, without a path.
	Endpoint string
	Bucket   string
	// Region is the bucket's region; empty asks the store.
	Region string
	// PathStyle addresses the bucket as <endpoint>/<bucket>.
	PathStyle bool
	// CredentialsDir holds the files AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	CredentialsDir string
	// CAFile, when set, holds the PEM certificates the endpoint's is verified by.
	CAFile string
}

// The files of CredentialsDir (the keys of an S3 destination's credentialsSecret).
const (
	AccessKeyIDFile     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyFile = "AWS_SECRET_ACCESS_KEY"
)

// AddFlags registers the flags of c on fs, each named --s3-<field>.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Endpoint, "s3-endpoint", "", "S3 endpoint URL (http:// or https://, no path)")
	fs.StringVar(&c.Bucket, "s3-bucket", "", "S3 bucket")
	fs.StringVar(&c.Region, "s3-region", "", "S3 region; empty asks the store")
	fs.BoolVar(&c.PathStyle, "s3-path-style", false, "address the bucket as <endpoint>/<bucket>")
	fs.StringVar(&c.CredentialsDir, "s3-credentials-dir", "", "folder with the files "+AccessKeyIDFile+" and "+SecretAccessKeyFile)
	fs.StringVar(&c.CAFile, "s3-ca-file", "", "PEM certificates to verify an https endpoint by, instead of the system's")
}

// Args renders c as the flags AddFlags reads; none when c is zero.
func (c Config) Args() []string {
	if c == (Config{}) {
		return nil
	}
	args := []string{"--s3-endpoint=" + c.Endpoint, "--s3-bucket=" + c.Bucket, "--s3-credentials-dir=" + c.CredentialsDir}
	if c.Region != "" {
		args = append(args, "--s3-region="+c.Region)
	}
	if c.PathStyle {
		args = append(args, "--s3-path-style")
	}
	if c.CAFile != "" {
		args = append(args, "--s3-ca-file="+c.CAFile)
	}
	return args
}

// IsZero reports whether no store is configured.
func (c Config) IsZero() bool { return c == (Config{}) }

// Validate checks a configured store's flags.
func (c Config) Validate() error {
	u, err := url.Parse(c.Endpoint)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("--s3-endpoint %q is not an http:// or https:// URL with a host", c.Endpoint)
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "":
		return fmt.Errorf("--s3-endpoint %q has a path or a query", c.Endpoint)
	case c.Bucket == "":
		return errors.New("--s3-bucket is required")
	case c.CredentialsDir == "":
		return errors.New("--s3-credentials-dir is required")
	}
	return nil
}

// Store is one bucket of an S3-compatible store.
type Store struct {
	client *minio.Client
	bucket string
	// secrets are the credentials, kept out of every error's text.
	secrets []string
}

// Open reads the credentials and the CA and returns the bucket's Store. It does not call
// the store.
func Open(c Config) (*Store, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	id, err := readCredential(c.CredentialsDir, AccessKeyIDFile)
	if err != nil {
		return nil, err
	}
	secret, err := readCredential(c.CredentialsDir, SecretAccessKeyFile)
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
		return fmt.Errorf("%w: the store has no bucket %s", ErrBucketNotFound, s.bucket)
	}
	return nil
}

// Put streams r to the object key, in parts of PartSize, and returns the bytes stored. It
// reads the next part while it sends the ones before (uploadThreads at a time). The object
// appears whole or not at all: an upload that fails, on an error of r too (the one of its
// last read included), is aborted before it completes.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	info, err := s.client.PutObject(ctx, s.bucket, key, r, -1, minio.PutObjectOptions{
		PartSize: PartSize, ContentType: "application/octet-stream",
		ConcurrentStreamParts: true, NumThreads: uploadThreads})
	if err != nil {
		return 0, s.wrap(err, "uploading %s", key)
	}
	return info.Size, nil
}

// PutBytes stores b as the object key.
func (s *Store) PutBytes(ctx context.Context, key string, b []byte) error {
	_, err := s.client.PutObject(ctx, s.bucket, key, strings.NewReader(string(b)), int64(len(b)), minio.PutObjectOptions{
		ContentType: "text/plain"})
	if err != nil {
		return s.wrap(err, "uploading %s", key)
	}
	return nil
}

// Object is an object being read: as a stream, or at offsets (each ReadAt a ranged request).
type Object interface {
	io.ReadCloser
	io.ReaderAt
	// Size is the object's size.
	Size() int64
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

// Open opens the object key for reading; an error wrapping ErrNotFound when there is none.
func (s *Store) Open(ctx context.Context, key string) (Object, error) {
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
			if err := s.wrap(err, "deleting %s", k); !errors.Is(err, ErrNotFound) {
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
			return ErrAccessDenied, msg
		case "NoSuchBucket":
			return ErrBucketNotFound, msg
		case "NoSuchKey", "NoSuchObject":
			return ErrNotFound, msg
		case "QuotaExceeded", "EntityTooLarge", "XMinioStorageFull", "StorageFull":
			return ErrQuota, msg
		}
		switch resp.StatusCode {
		case http.StatusForbidden:
			return ErrAccessDenied, msg
		case http.StatusNotFound:
			return ErrNotFound, msg
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
		return ErrUnreachable, err.Error()
	}
	return nil, err.Error()
}
