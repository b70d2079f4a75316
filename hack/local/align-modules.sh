#!/usr/bin/env bash
# align-modules.sh [fix]: the node's helper modules (build/k8s, build/coredns,
# build/local-path-provisioner) compile many of the project's dependencies (client-go, grpc,
# protobuf, golang.org/x/...). Where they require the same versions as the project, Go's build
# cache compiles each such package once for both, and a cold make test builds the node on what
# make unit compiled (docs/testing.md). This lists every module that the project and a
# helper both compile at different versions, and fails when there is one (make verify);
#   hack/local/align-modules.sh fix
# moves each helper to the project's versions (go get, go mod tidy). A module the project
# compiles at a lower version than a helper needs is the project's to move: the script names it.
# The etcd helpers are left out on purpose: etcd is built with the versions of its release.
set -euo pipefail
export LC_ALL=C # sort and join agree on the order
SCRIPT_NAME=align
. "$(dirname "$0")/lib.sh"

declare -A PKGS=(
	[k8s]="$(printf 'k8s.io/kubernetes/cmd/%s ' kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)"
	[coredns]="."
	[local-path-provisioner]="github.com/rancher/local-path-provisioner"
)
# compiled DIR PKGS...: "module version" of every non-standard package the build of PKGS compiles
compiled() {
	local dir=$1
	shift
	(cd "$dir" && CGO_ENABLED=0 go list -deps -f '{{if not .Standard}}{{with .Module}}{{.Path}} {{.Version}}{{end}}{{end}}' "$@") |
		sort -u
}
project=$(
	compiled "$ROOT" ./...
	compiled "$ROOT" -tags e2e ./test/e2e/...
)
project=$(sort -u <<<"$project")
mode=${1:-check}
lagging=0
for h in "${!PKGS[@]}"; do
	# shellcheck disable=SC2086 # PKGS holds package lists
	helper=$(compiled "$LOCAL_DIR/build/$h" ${PKGS[$h]})
	# module, the project's version, the helper's version: where both compile it, differently
	diff=$(join <(echo "$project") <(echo "$helper") | awk '$2 != $3 && $3 != "v0.0.0"')
	[ -n "$diff" ] || continue
	up=()
	while read -r mod pv hv; do
		if [ "$(printf '%s\n%s\n' "$pv" "$hv" | sort -V | tail -1)" = "$pv" ]; then
			echo "build/$h: $mod $hv, the project $pv"
			up+=("$mod@$pv")
		else
			echo "build/$h: $mod $hv, the project $pv: the project's to move (go get $mod@$hv in $ROOT)"
		fi
		lagging=1
	done <<<"$diff"
	if [ "$mode" = fix ] && [ "${#up[@]}" -gt 0 ]; then
		(cd "$LOCAL_DIR/build/$h" && go get "${up[@]}" && go mod tidy)
	fi
done
if [ "$lagging" = 1 ] && [ "$mode" != fix ]; then
	die "the node's helper modules compile the project's dependencies at other versions: hack/local/align-modules.sh fix (docs/testing.md)"
fi
[ "$lagging" = 0 ] && ts "the node's helper modules compile the project's dependencies at the project's versions"
exit 0
