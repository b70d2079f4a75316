#!/usr/bin/env bash
# warm-builds.sh: compiles, without linking, what make e2e builds first on a cold machine (the S3
# store's versitygw, which the first test waits for, then Prometheus) into Go's build cache,
# with the flags and tags hack/s3.sh and hack/prometheus.sh build with. make test starts it at
# the lowest priority (nice 19) beside its unit, verify and up phases, whose tests, installs
# and waits leave the CPU idle at times, and ends it when its e2e phase starts
# (hack/phases.sh): the real builds then compile only what it did not. Ended at any point, it
# loses nothing but the compile under way.
set -euo pipefail
SCRIPT_NAME=warm
. "$(dirname "$0")/local/lib.sh"
export CGO_ENABLED=0
# warm DIR TAGS PKG: every package PKG imports (several packages: go build keeps no output)
warm() {
	local dir=$1 tags=$2 pkg=$3 start=$SECONDS
	# shellcheck disable=SC2046 # a list of packages
	(cd "$dir" && go build -trimpath -tags "$tags" $(go list -tags "$tags" -f '{{join .Imports " "}}' "$pkg"))
	ts "compiled what $pkg imports in $((SECONDS - start))s"
}
warm "$LOCAL_DIR/build/versitygw" "" github.com/versity/versitygw/cmd/versitygw
warm "$ROOT/hack/tools/prometheus" "$PROMETHEUS_TAGS" github.com/prometheus/prometheus/cmd/prometheus
