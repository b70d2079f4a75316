// Command s3bucket keeps a bucket of the S3-compatible store of `make s3` (hack/s3.sh) in
// existence: it runs beside the store in its pod, creates the bucket once the store answers,
// and again should the store lose it (its data is an emptyDir). With -check it exits 0 only
// when the bucket exists: the container's readiness probe, so that the store's pod is Ready
// once the bucket is. The credentials are AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, from
// the environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	endpoint := flag.String("endpoint", "http://127.0.0.1:7070", "the store's URL")
	bucket := flag.String("bucket", "", "the bucket to keep")
	region := flag.String("region", "us-east-1", "the store's region")
	check := flag.Bool("check", false, "exit 0 when the bucket exists, 1 otherwise, and do nothing else")
	every := flag.Duration("every", 10*time.Second, "how often to look at the bucket")
	flag.Parse()
	if err := run(*endpoint, *bucket, *region, *check, *every); err != nil {
		fmt.Fprintf(os.Stderr, "s3bucket: %v\n", err)
		os.Exit(1)
	}
}

func run(endpoint, bucket, region string, check bool, every time.Duration) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || bucket == "" {
		return errors.New("usage: s3bucket -endpoint URL -bucket NAME [-check]")
	}
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set")
	}
	client, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(id, secret, ""), Secure: u.Scheme == "https",
		Region: region, BucketLookup: minio.BucketLookupPath, MaxRetries: 1})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if check {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ok, err := client.BucketExists(ctx, bucket)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("no bucket %s", bucket)
		}
		return nil
	}
	for {
		if err := ensure(ctx, client, bucket, region); err != nil {
			fmt.Fprintf(os.Stderr, "s3bucket: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// ensure creates the bucket when the store answers that it has none.
func ensure(ctx context.Context, client *minio.Client, bucket, region string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ok, err := client.BucketExists(ctx, bucket)
	if err != nil || ok {
		return err
	}
	if err := client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: region}); err != nil {
		return fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	fmt.Printf("s3bucket: created bucket %s\n", bucket)
	return nil
}
