#!/usr/bin/env bash
# The kind path, for machines with a Docker engine: installs the pinned kind with
# go install (into the cache), creates the cluster "etcd-operator" if it does not exist
# and writes its kubeconfig where the local node's would be. kind's default StorageClass
# is also named "standard", and its CoreDNS keeps the upstream 30 s cache, so the e2e
# tests run unchanged. Idempotent.
set -euo pipefail
SCRIPT_NAME=kind-up
. "$(dirname "$0")/../local/lib.sh"

KIND_BIN=$CACHE/kind-$KIND_VERSION/bin
if [ ! -x "$KIND_BIN/kind" ]; then
	ts "installing kind $KIND_VERSION into $KIND_BIN"
	GOBIN=$KIND_BIN CGO_ENABLED=0 go install "sigs.k8s.io/kind@$KIND_VERSION"
fi
"$LOCAL_DIR/build.sh" kubectl
export PATH=$KIND_BIN:$PATH
mkdir -p "$STATE"
if ! kind get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
	ts "creating kind cluster $CLUSTER_NAME"
	kind create cluster --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_FILE" --wait 180s
fi
kind export kubeconfig --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_FILE"
export KUBECONFIG=$KUBECONFIG_FILE
waitfor "node Ready" 180 kubectl wait --for=condition=Ready node --all --timeout=2s
waitfor "CoreDNS Available" 180 kubectl -n kube-system wait --for=condition=Available deploy/coredns --timeout=2s
ts "kind cluster $CLUSTER_NAME is up: export KUBECONFIG=$KUBECONFIG_FILE"
