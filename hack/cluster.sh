#!/usr/bin/env bash
# Entry point of the make targets that need a cluster. Picks the kind of cluster once and
# remembers it in the state folder until "down":
#   kind   when a Docker engine answers (docker info) - hack/kind/*.sh
#   local  otherwise: the single node of hack/local/*.sh (containerd, no Docker, no registry)
# CLUSTER=local|kind overrides the choice.
# Usage: hack/cluster.sh up|down|kubeconfig|mode
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
	"$ROOT/hack/$m/up.sh"
	echo "$m" >"$STATE/mode"
	;;
down)
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
*)
	echo "usage: $0 up|down|kubeconfig|mode" >&2
	exit 2
	;;
esac
