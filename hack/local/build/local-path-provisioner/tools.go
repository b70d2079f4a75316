//go:build tools

// Package tools pins rancher's local-path-provisioner, which hack/local/build.sh
// builds for the default StorageClass "standard" of the local node. go.mod raises its
// Kubernetes modules (and golang.org/x/net, protobuf with them) to those of build/k8s, built
// just before it: the provisioner then compiles against packages already in Go's build cache
// instead of a Kubernetes client of its own.
package tools

import _ "github.com/rancher/local-path-provisioner"
