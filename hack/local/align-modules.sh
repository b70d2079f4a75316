#!/usr/bin/env bash
# align-modules.sh [fix]: the node's helper modules (hack/local/build/{k8s,coredns,
# local-path-provisioner,versitygw}) and the tools the suite builds (hack/tools/{helm,prometheus})
# compile many of the project's dependencies (client-go, grpc, protobuf, golang.org/x/...).
# Where they require the same versions as the project, Go's build cache compiles each such
# package once for all of them, and a cold make test builds the node and the tools on what make
# unit compiled (docs/testing.md). This lists every module that the project and a helper both
# compile at different versions, and fails when there is one (make verify);
#   hack/local/align-modules.sh fix
# moves each helper to the project's versions (go get, go mod tidy). A module the project
# compiles at a lower version than a helper needs is the project's to move: the script names it
# (or pin the helper's main module one release back, as helm and Prometheus are: their newer
# releases need a client-go the node's Kubernetes does not build with).
# The etcd helpers are left out on purpose: etcd is built with the versions of its release.
set -euo pipefail
export LC_ALL=C # sort and join agree on the order
SCRIPT_NAME=align
. "$(dirname "$0")/lib.sh"

# each helper module (folder under hack/) and what is built of it, with its build tags first
# ('' for none)
declare -A PKGS=(
	[local/build/k8s]="'' $(printf 'k8s.io/kubernetes/cmd/%s ' kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)"
	[local/build/coredns]="'' ."
	[local/build/local-path-provisioner]="'' github.com/rancher/local-path-provisioner"
	[local/build/versitygw]="'' github.com/versity/versitygw/cmd/versitygw"
	[tools/helm]="'' helm.sh/helm/v3/cmd/helm"
	[tools/prometheus]="$PROMETHEUS_TAGS github.com/prometheus/prometheus/cmd/prometheus"
)
# compiled DIR TAGS PKGS...: "module version" of every non-standard package the build of PKGS
# compiles
compiled() {
	local dir=$1 tags=$2
	shift 2
	(cd "$dir" && CGO_ENABLED=0 go list -tags "$tags" -deps -f '{{if not .Standard}}{{with .Module}}{{.Path}} {{.Version}}{{end}}{{end}}' "$@") |
		sort -u
}
# newer A B: the newer of two module versions, a pre-release (v1.2.3-0.2026...) older than its
# release (sort -V alone has it newer)
newer() {
	local a=$1 b=$2
	if [ "${a%%-*}" != "${b%%-*}" ]; then
		printf '%s\n%s\n' "${a%%-*}" "${b%%-*}" | sort -V | tail -1 | grep -qxF "${a%%-*}" && echo "$a" || echo "$b"
	elif [ "$a" = "${a%%-*}" ]; then
		echo "$a"
	elif [ "$b" = "${b%%-*}" ]; then
		echo "$b"
	else
		printf '%s\n%s\n' "$a" "$b" | sort -V | tail -1
	fi
}
project=$(
	compiled "$ROOT" "" ./...
	compiled "$ROOT" e2e ./test/e2e/...
)
project=$(sort -u <<<"$project")
mode=${1:-check}
lagging=0
for h in "${!PKGS[@]}"; do
	read -r tags pkgs <<<"${PKGS[$h]}"
	[ "$tags" != "''" ] || tags=
	# shellcheck disable=SC2086 # a package list
	helper=$(compiled "$ROOT/hack/$h" "$tags" $pkgs)
	# module, the project's version, the helper's version: where both compile it, differently
	diff=$(join <(echo "$project") <(echo "$helper") | awk '$2 != $3 && $3 != "v0.0.0"')
	[ -n "$diff" ] || continue
	up=()
	while read -r mod pv hv; do
		if [ "$(newer "$pv" "$hv")" = "$pv" ]; then
			echo "hack/$h: $mod $hv, the project $pv"
			up+=("$mod@$pv")
		else
			echo "hack/$h: $mod $hv, the project $pv: the project's to move (go get $mod@$hv in $ROOT)"
		fi
		lagging=1
	done <<<"$diff"
	if [ "$mode" = fix ] && [ "${#up[@]}" -gt 0 ]; then
		(cd "$ROOT/hack/$h" && go get "${up[@]}" && go mod tidy)
	fi
done
if [ "$lagging" = 1 ] && [ "$mode" != fix ]; then
	die "the helper modules compile the project's dependencies at other versions: hack/local/align-modules.sh fix (docs/testing.md)"
fi
[ "$lagging" = 0 ] && ts "the helper modules compile the project's dependencies at the project's versions"
exit 0
