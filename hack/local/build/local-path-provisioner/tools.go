//go:build tools

// Package tools pins rancher's local-path-provisioner, which hack/local/build.sh
// builds for the default StorageClass "standard" of the local node.
package tools

import _ "github.com/rancher/local-path-provisioner"
