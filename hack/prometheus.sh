#!/usr/bin/env bash
# make prometheus: builds the Prometheus server of the version hack/tools/prometheus/go.mod
# pins, from Go modules, into the tool cache (once per version and recipe: seconds when
# cached) and links it as bin/prometheus, for the e2e suite's live alert test
# (test/e2e/prometheus_test.go). deploy/monitoring/prometheus.yml discovers pods through
# Kubernetes, which Debian's prometheus package is built without. Prometheus' own build tags
# (its plugins/ package) leave out every other service discovery (file and HTTP discovery
# always stay); the web UI's assets are left out too (builtinassets unset): the test reads
# the API only.
set -euo pipefail
SCRIPT_NAME=prometheus
. "$(dirname "$0")/local/lib.sh"

MOD=$ROOT/hack/tools/prometheus
MOD_VERSION=$(sed -n 's/^\(require\)\{0,1\}[[:space:]]*github.com\/prometheus\/prometheus \(v[^ ]*\).*/\2/p' "$MOD/go.mod" | head -1)
[ -n "$MOD_VERSION" ] || die "hack/tools/prometheus/go.mod requires no github.com/prometheus/prometheus"
# the module's v0.3MM.P is Prometheus 3.MM.P
v=${MOD_VERSION#v0.}
VERSION=${v:0:1}.$((10#${v:1:2})).${v#*.}
TAGS=$PROMETHEUS_TAGS
tool_from_module prometheus "$VERSION" "$MOD" github.com/prometheus/prometheus/cmd/prometheus \
	"-s -w -X github.com/prometheus/common/version.Version=$VERSION" "$TAGS"
