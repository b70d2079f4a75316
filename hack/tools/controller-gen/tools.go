//go:build tools

// Package tools pins controller-gen, which hack/update-codegen.sh builds from this module to
// generate the EtcdCluster CRD from the API types. It lives in its own module so that
// controller-tools and its dependencies stay out of the operator's go.mod.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
