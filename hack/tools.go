//go:build tools

// Package tools pins the code generators hack/update-codegen.sh runs, so that
// `go mod tidy` keeps k8s.io/code-generator in go.mod at the version of the
// Kubernetes libraries; the script runs kube_codegen.sh from that module.
package tools

import (
	_ "k8s.io/code-generator"
)
