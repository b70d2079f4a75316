//go:build tools

// Package tools pins etcd, etcdctl and etcdutl, which hack/local/build.sh builds
// for the local node's control plane and for the etcd image.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
