//go:build tools

// Package tools pins CoreDNS, which hack/local/build.sh builds for the cluster DNS image.
package tools

import _ "github.com/coredns/coredns"
