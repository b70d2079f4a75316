# Sourced by hack/kind/*.sh: the kind path's paths and its Docker engine.
#
# The engine is chosen once per `make up` and remembered in the state folder until `make down`:
#   - DOCKER_HOST set by the user, or an engine answering on the default socket: the host's
#     engine, used as it is (nothing of its configuration is touched, it is never stopped);
#   - otherwise the project's own dockerd (Debian's docker.io), started by hack/kind/engine.sh
#     on a private socket, $ENGINE_RUN/docker.sock, with its data in the cache. Its socket is
#     not the default one, so a plain `docker info`, and with it hack/cluster.sh's choice of
#     cluster, never sees it: only CLUSTER=kind uses it.
# shellcheck shell=bash

KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../local/lib.sh
. "$KIND_DIR/../local/lib.sh"

KIND_BIN=$CACHE/kind-$KIND_VERSION/bin
export PATH=$KIND_BIN:$PATH
# the project's own engine: runtime files (socket, pid, what it changed on the host) in
# ENGINE_RUN, images and containers in ENGINE_DATA (kept by make down: it caches the node image)
ENGINE_RUN=${ETCD_OPERATOR_ENGINE_RUN:-/run/etcd-operator-docker}
ENGINE_DATA=$CACHE/docker
ENGINE_SOCK=$ENGINE_RUN/docker.sock
ENGINE_PID=$ENGINE_RUN/dockerd.pid
# written by up: "own" or "host", and the DOCKER_HOST in use ("" for the default socket)
ENGINE_STATE=$STATE/engine
# kind's pods use their own range: the local node's guard (hack/local/up.sh) drops traffic
# from 10.244.0.0/16 that leaves its bridge, and the two clusters may run at once
KIND_POD_SUBNET=10.240.0.0/16
# KIND_WORKERS: worker nodes beside the control plane (see docs/kind.md for what fits)
KIND_WORKERS=${KIND_WORKERS:-2}

# use_engine: export DOCKER_HOST for the engine recorded by up (no-op for the default socket).
use_engine() {
	local h
	[ -f "$ENGINE_STATE" ] || return 0
	h=$(sed -n 's/^docker_host=//p' "$ENGINE_STATE")
	if [ -n "$h" ]; then export DOCKER_HOST=$h; fi
}

# engine_kind: "own" when the recorded engine is the project's dockerd, else "host".
engine_kind() { sed -n 's/^engine=//p' "$ENGINE_STATE" 2>/dev/null; }

# own_engine_alive: the dockerd recorded in $ENGINE_PID runs and is ours (its command line
# names our socket), so a recycled pid is never taken for it.
own_engine_alive() {
	local pid
	[ -f "$ENGINE_PID" ] || return 1
	pid=$(cat "$ENGINE_PID")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	[[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" == *"unix://$ENGINE_SOCK"* ]]
}

# node_image: the tag of the offline node image for this version set and recipe.
node_image() {
	echo "etcd-operator/kind-node:$KUBERNETES_VERSION-$(hash_of "$KIND_DIR/node-image.sh" "$KIND_DIR/manifests/"*.yaml "$LOCAL_DIR/versions.env" "$LOCAL_DIR/images.sh" "$ROOT/hack/tools/mkimage/main.go" <(echo "$K8S_BIN $COREDNS_BIN $LPP_BIN"))"
}
