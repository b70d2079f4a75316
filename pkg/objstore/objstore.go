// Package objstore describes the S3-compatible bucket an EtcdBackup writes to and a restored
// seed reads from: how a pod is told to reach it (Config, the flags of the agent's
// subcommands, which the operator renders into the pods it builds), the errors a store's
// answers are classified into, and an object as it is read. The client itself, minio-go, is
// in package s3, which only the agent binary links: the operator never calls a store, and
// the credentials are files only the pods that move a snapshot mount.
package objstore

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
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
	// ErrChecksumMismatch: the store's checksum of an object it stored is not that of the
	// bytes sent: they were altered on the way.
	ErrChecksumMismatch = errors.New("checksum mismatch")
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

// Object is an object being read: as a stream, or at offsets (each ReadAt a ranged request).
type Object interface {
	io.ReadCloser
	io.ReaderAt
	// Size is the object's size.
	Size() int64
}
