//go:build tools

// Package tools pins the Prometheus server that make prometheus builds from this module into
// the cache (hack/prometheus.sh) for the e2e suite's live alert test. It lives in its own
// module so that Prometheus and its dependencies stay out of the operator's go.mod.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
)
