#!/usr/bin/env bash
# Deletes the kind cluster created by hack/kind/up.sh, the Docker network "kind" when up
# created it, stops the project's own dockerd (engine.sh down: by its pid, with the iptables
# chains and sysctl changes it made undone) and removes the state folder. A host's engine is
# left running as it was. The node image stays cached in the engine's data. Safe when nothing
# exists.
set -euo pipefail
SCRIPT_NAME=kind-down
. "$(dirname "$0")/lib.sh"

use_engine
[ -f "$ENGINE_STATE" ] || ! own_engine_alive || export DOCKER_HOST=unix://$ENGINE_SOCK
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
	if [ -x "$KIND_BIN/kind" ] && grep -qx "$CLUSTER_NAME" <<<"$(kind get clusters 2>/dev/null)"; then
		kind delete cluster --name "$CLUSTER_NAME"
	fi
	# the image-build container of an interrupted node-image.sh
	for c in $(docker ps -aq --filter name=etcd-operator-node-build-); do docker rm -f "$c" >/dev/null; done
	if [ -f "$STATE/kind-network-created" ] || [ "$(engine_kind)" = own ] || own_engine_alive; then
		if docker network inspect kind >/dev/null 2>&1; then
			docker network rm kind >/dev/null && ts "removed the Docker network kind"
		fi
	fi
fi
"$KIND_DIR/engine.sh" down
if [ -d "$RUN" ]; then
	# the local node's state (a local make up that stopped before recording its mode): its
	# make down needs it, so only the kind path's files go
	rm -f "$ENGINE_STATE" "$STATE/kind-config.yaml" "$STATE/kind-network-created"
else
	rm -rf "$STATE"
fi
ts "down: done"
