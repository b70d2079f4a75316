#!/usr/bin/env bash
# Builds what the local node needs and is not in the cache yet: the Kubernetes
# components and kubectl, etcd/etcdctl/etcdutl, CoreDNS (the plugins it needs), local-path-provisioner
# (all from the Go modules in hack/local/build/), the pause binary (k8s' pause.c
# with gcc -static) and the two small tools crirm and mkimage. A binary that is
# present is never rebuilt; outputs are keyed by version (see lib.sh).
set -euo pipefail
SCRIPT_NAME=build
. "$(dirname "$0")/lib.sh"

# check_pin MODULE_DIR MODULE VERSION: the helper module requires exactly the pinned version.
check_pin() {
	grep -qE "^[[:space:]]*(require[[:space:]]+)?$2 $3( |$)" "$LOCAL_DIR/build/$1/go.mod" ||
		die "hack/local/build/$1/go.mod does not require $2 $3 (versions.env); run: cd hack/local/build/$1 && go get $2@$3 && go mod tidy"
}
check_pin k8s k8s.io/kubernetes "$KUBERNETES_VERSION"
check_pin etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
for v in $ETCD_EXTRA_VERSIONS; do check_pin "$(etcd_module "$v")" go.etcd.io/etcd/server/v3 "$v"; done
check_pin coredns github.com/coredns/coredns "$COREDNS_VERSION"
check_pin local-path-provisioner github.com/rancher/local-path-provisioner "$LOCAL_PATH_PROVISIONER_VERSION"

# gobuild MODULE_DIR OUT PKG [LDFLAGS]: static build into a temporary file, then an
# atomic rename, so an interrupted build never leaves a binary that looks cached.
gobuild() {
	local dir=$1 out=$2 pkg=$3 ld="-s -w ${4:-}" start=$SECONDS
	mkdir -p "$(dirname "$out")"
	ts "building $(basename "$out") ($pkg)"
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$out.part" "$pkg")
	mv "$out.part" "$out"
	ts "built $(basename "$out") in $((SECONDS - start))s"
}

B=$LOCAL_DIR/build
K8S_LD=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	minor=${KUBERNETES_VERSION#v1.}
	K8S_LD="$K8S_LD -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=${minor%%.*}"
	K8S_LD="$K8S_LD -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
# one client binary alone: kubectl (the kind path), kubeadm (the kind node image)
case ${1:-} in
kubectl | kubeadm)
	[ -x "$K8S_BIN/$1" ] || gobuild "$B/k8s" "$K8S_BIN/$1" "k8s.io/kubernetes/cmd/$1" "$K8S_LD"
	exit 0
	;;
esac
# kube-apiserver first: it compiles most of the shared dependencies.
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
	[ -x "$K8S_BIN/$c" ] || gobuild "$B/k8s" "$K8S_BIN/$c" "k8s.io/kubernetes/cmd/$c" "$K8S_LD"
done
crirm=$(cri_tool)
[ -x "$crirm" ] || gobuild "$B/k8s" "$crirm" ./crirm

ETCD_LD="-X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION"
[ -x "$ETCD_BIN/etcd" ] || gobuild "$B/etcd" "$ETCD_BIN/etcd" go.etcd.io/etcd/server/v3 "$ETCD_LD"
[ -x "$ETCD_BIN/etcdctl" ] || gobuild "$B/etcd" "$ETCD_BIN/etcdctl" go.etcd.io/etcd/etcdctl/v3 "$ETCD_LD"
[ -x "$ETCD_BIN/etcdutl" ] || gobuild "$B/etcd" "$ETCD_BIN/etcdutl" go.etcd.io/etcd/etcdutl/v3 "$ETCD_LD"
for v in $ETCD_EXTRA_VERSIONS; do
	bin=$(etcd_bin "$v") mod=$B/$(etcd_module "$v")
	for c in etcd:server etcdctl:etcdctl etcdutl:etcdutl; do
		[ -x "$bin/${c%%:*}" ] || gobuild "$mod" "$bin/${c%%:*}" "go.etcd.io/etcd/${c#*:}/v3" "-X go.etcd.io/etcd/api/v3/version.GitSHA=$v"
	done
done

# CoreDNS with the plugins the clusters use (build/coredns/main.go says which), not its own main
[ -x "$COREDNS_BIN/coredns" ] || gobuild "$B/coredns" "$COREDNS_BIN/coredns" . \
	"-X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"

[ -x "$LPP_BIN/local-path-provisioner" ] || gobuild "$B/local-path-provisioner" "$LPP_BIN/local-path-provisioner" \
	github.com/rancher/local-path-provisioner "-X main.VERSION=$LOCAL_PATH_PROVISIONER_VERSION"

mk=$(mkimage_tool)
[ -x "$mk" ] || gobuild "$ROOT" "$mk" ./hack/tools/mkimage

if [ ! -x "$PAUSE_BIN/pause" ]; then
	# pause.c ships in the k8s.io/kubernetes module (build/pause/linux), which the k8s helper module requires
	src=$(cd "$B/k8s" && go mod download -json k8s.io/kubernetes | jq -r .Dir)/build/pause/linux/pause.c
	[ -f "$src" ] || die "pause.c not found at $src"
	ts "building pause $PAUSE_VERSION with gcc -static"
	mkdir -p "$PAUSE_BIN"
	gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-etcd-operator" -o "$PAUSE_BIN/pause.part" "$src"
	strip "$PAUSE_BIN/pause.part"
	mv "$PAUSE_BIN/pause.part" "$PAUSE_BIN/pause"
fi
ts "binaries present in $CACHE"
