//go:build tools

// Package tools pins helm, which make helm builds from this module into the cache
// (hack/helm.sh), and the kustomize library kubectl embeds, with which the tests of this
// module render deploy/ to compare it with the chart (render_test.go). It lives in its own
// module so that helm and its dependencies stay out of the operator's go.mod.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
