//go:build tools

// Package tools pins helm, which make helm builds from this module into the cache
// (hack/helm.sh), and the kustomize library kubectl embeds (sigs.k8s.io/kustomize/api at the
// version k8s.io/cli-runtime requires for the kubectl of hack/local/versions.env), with which
// render/ builds deploy/ for deploy/'s tests to compare it with the chart. It lives in its own
// module so that helm, kustomize and their dependencies stay out of the operator's go.mod.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
