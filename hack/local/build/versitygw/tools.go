//go:build tools

// Package tools pins versitygw, which hack/s3.sh builds for the S3-compatible store of make s3.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
