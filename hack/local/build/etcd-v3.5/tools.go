//go:build tools

// Package tools pins etcd, etcdctl and etcdutl v3.5.35, which hack/local/build.sh builds for the
// member image gcr.io/etcd-development/etcd:v3.5.35 (ETCD_EXTRA_VERSIONS in versions.env): the
// version-change tests run clusters on it.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
