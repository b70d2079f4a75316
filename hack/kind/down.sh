#!/usr/bin/env bash
# Deletes the kind cluster created by hack/kind/up.sh and the state folder. Safe when
# nothing exists.
set -uo pipefail
SCRIPT_NAME=kind-down
. "$(dirname "$0")/../local/lib.sh"

KIND_BIN=$CACHE/kind-$KIND_VERSION/bin
if [ -x "$KIND_BIN/kind" ] && "$KIND_BIN/kind" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
	"$KIND_BIN/kind" delete cluster --name "$CLUSTER_NAME"
fi
rm -rf "$STATE"
ts "down: done"
