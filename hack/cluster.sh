#!/usr/bin/env bash
# Entry point of the make targets that need a cluster. Picks the kind of cluster once and
# remembers it in the state folder until "down":
#   kind   when a Docker engine answers on the default socket or $DOCKER_HOST (docker info)
#          - hack/kind/*.sh
#   local  otherwise: the single node of hack/local/*.sh (containerd, no Docker, no registry)
# CLUSTER=local|kind overrides the choice; CLUSTER=kind starts the project's own dockerd when
# no engine answers. That dockerd listens on a private socket (hack/kind/lib.sh), so one left
# running never turns a later plain `make up` into kind: only CLUSTER=kind, or a kind
# cluster this clone has up, uses it.
# Usage: hack/cluster.sh up|down|kubeconfig|mode|env
set -euo pipefail
. "$(dirname "$0")/local/lib.sh"

mode() {
	if [ -n "${CLUSTER:-}" ]; then
		echo "$CLUSTER"
	elif [ -f "$STATE/mode" ]; then
		cat "$STATE/mode"
	elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
		echo kind
	else
		echo local
	fi
}

m=$(mode)
case $m in
local | kind) ;;
*) die "CLUSTER=$m: expected local or kind" ;;
esac

case ${1:-} in
up)
	# one cluster per clone: both kinds keep their state (kubeconfig among it) in $STATE
	if [ -f "$STATE/mode" ] && [ "$(cat "$STATE/mode")" != "$m" ]; then
		die "this clone has a $(cat "$STATE/mode") cluster up: CLUSTER=$(cat "$STATE/mode") make down first"
	fi
	"$ROOT/hack/$m/up.sh"
	echo "$m" >"$STATE/mode"
	;;
down)
	if [ -f "$STATE/mode" ] && [ "$(cat "$STATE/mode")" != "$m" ]; then
		echo "this clone's cluster is a $(cat "$STATE/mode") cluster: no $m cluster to take down"
		exit 0
	fi
	"$ROOT/hack/$m/down.sh"
	;;
kubeconfig)
	# only the path on stdout, so that: export KUBECONFIG=$(make -s kubeconfig)
	[ -f "$KUBECONFIG_FILE" ] || { echo "no cluster is up (no $KUBECONFIG_FILE): run make up" >&2; exit 1; }
	echo "$KUBECONFIG_FILE"
	;;
mode)
	echo "$m"
	;;
env)
	# what the e2e suite needs besides KUBECONFIG, as shell assignments: the cluster's kind and,
	# on kind, the engine holding its nodes (the multi-node tests stop and start node containers)
	echo "export E2E_CLUSTER=$m"
	if [ "$m" = kind ] && [ -f "$STATE/engine" ]; then
		h=$(sed -n 's/^docker_host=//p' "$STATE/engine")
		if [ -n "$h" ]; then echo "export DOCKER_HOST=$h"; fi
	fi
	;;
*)
	echo "usage: $0 up|down|kubeconfig|mode|env" >&2
	exit 2
	;;
esac
