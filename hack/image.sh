#!/usr/bin/env bash
# Builds the operator image ${IMAGE:-etcd-operator:dev} and loads it into the cluster:
#   local: two static binaries (CGO_ENABLED=0) packed by hack/tools/mkimage like a distroless
#          static image (user 65532:65532): the operator at /etcd-operator, the entrypoint,
#          and beside it /etcd-operator-agent, the subcommands its pods run (member-init,
#          install, backup, fetch-snapshot), which the entrypoint execs; imported into the
#          node's containerd with ctr; no Docker, no registry.
#   kind:  the same tarball, docker load'ed into the kind path's engine and loaded into the
#          nodes with kind load docker-image (no docker build: it would pull its base images).
# When the image changed and Deployments in etcd-operator-system run it, they are restarted.
# OPERATOR_SRC (a Go module folder, default the clone) and OPERATOR_PKG (default
# ./cmd/etcd-operator) choose what is built; the agent is ./cmd/etcd-operator-agent of
# OPERATOR_SRC, when it has one (sources before the split built one binary).
set -euo pipefail
SCRIPT_NAME=image
. "$(dirname "$0")/local/lib.sh"

IMAGE=${IMAGE:-etcd-operator:dev}
OUT=${OUTPUT_DIR:-$ROOT/_output}
OPERATOR_NS=etcd-operator-system
SRC=${OPERATOR_SRC:-$ROOT}
PKG=${OPERATOR_PKG:-./cmd/etcd-operator}
AGENT_PKG=./cmd/etcd-operator-agent
# grpcnotrace keeps golang.org/x/net/trace (and with it html/template) out of the binary.
# text/template's reflective method calls make the linker keep every exported method of
# every reachable type; without them the binary loses a third of its size and the operator
# a matching share of its resident memory. The Dockerfile (a docker build outside these
# scripts) takes the same tags as a build argument.
GO_BUILD_TAGS=grpcnotrace
if [ ! -d "$SRC/$PKG" ]; then
	ts "$PKG does not exist yet in $SRC: no operator image to build"
	exit 0
fi
mode=$("$ROOT/hack/cluster.sh" mode)

mkdir -p "$OUT/bin" "$OUT/images"
ts "building $OUT/bin/etcd-operator"
(cd "$SRC" && CGO_ENABLED=0 go build -trimpath -tags "$GO_BUILD_TAGS" -ldflags "-s -w" -o "$OUT/bin/etcd-operator" "$PKG")
rm -f "$OUT/bin/etcd-operator-agent"
if [ -d "$SRC/$AGENT_PKG" ]; then
	ts "building $OUT/bin/etcd-operator-agent"
	(cd "$SRC" && CGO_ENABLED=0 go build -trimpath -tags "$GO_BUILD_TAGS" -ldflags "-s -w" -o "$OUT/bin/etcd-operator-agent" "$AGENT_PKG")
fi
work=$(mktemp -d "$OUT/images/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
# a distroless static base: /etc/passwd and /etc/group with nonroot (65532), /tmp
mkdir -p "$work/base/etc" "$work/base/tmp" "$work/base/home/nonroot" "$work/bin"
chmod 1777 "$work/base/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$work/base/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$work/base/etc/group"
cp "$OUT/bin/etcd-operator" "$work/bin/etcd-operator"
[ ! -f "$OUT/bin/etcd-operator-agent" ] || cp "$OUT/bin/etcd-operator-agent" "$work/bin/etcd-operator-agent"
mk=$(mkimage_tool)
[ -x "$mk" ] || (cd "$ROOT" && mkdir -p "$TOOLS_BIN" && CGO_ENABLED=0 go build -trimpath -o "$mk" ./hack/tools/mkimage)
id=$("$mk" -o "$OUT/images/etcd-operator.tar" -ref "$IMAGE" -layer "$work/base" -layer "$work/bin" \
	-entrypoint /etcd-operator -user 65532:65532 | sed -n 's/.*image id \(sha256:[0-9a-f]*\).*/\1/p')
ts "packed $IMAGE ($id) into $OUT/images/etcd-operator.tar"
if [ "$mode" = kind ]; then
	. "$ROOT/hack/kind/lib.sh"
	use_engine
	docker load -i "$OUT/images/etcd-operator.tar" >/dev/null
	kind load docker-image "$IMAGE" --name "$CLUSTER_NAME"
	ts "loaded $IMAGE into the kind nodes"
else
	if ! alive containerd; then
		ts "the local node is not running: image not imported (make up imports it)"
		exit 0
	fi
	ctr -a "$SOCK" -n k8s.io images import "$OUT/images/etcd-operator.tar" >/dev/null
	ts "imported $IMAGE into the node"
fi

# restart the operator when a new image replaced the one it runs
mkdir -p "$STATE"
stamp=$STATE/operator-image-id
if [ "$(cat "$stamp" 2>/dev/null)" != "$id" ]; then
	export KUBECONFIG=$KUBECONFIG_FILE
	for d in $(kubectl -n "$OPERATOR_NS" get deploy -o name 2>/dev/null); do
		if grep -qxF "$IMAGE" <<<"$(kubectl -n "$OPERATOR_NS" get "$d" -o jsonpath='{.spec.template.spec.containers[*].image}' | tr ' ' '\n')"; then
			kubectl -n "$OPERATOR_NS" rollout restart "$d"
		fi
	done
	echo "$id" >"$stamp"
fi
