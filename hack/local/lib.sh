# Sourced by hack/local/*.sh: paths, pinned versions and small helpers shared by
# the scripts that build, start and stop the project's local single-node cluster.
# shellcheck shell=bash

LOCAL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$LOCAL_DIR/../.." && pwd)
# shellcheck source=versions.env
. "$LOCAL_DIR/versions.env"

# Build outputs live outside the clone, keyed by version: a version bump builds anew,
# a binary that is present is never rebuilt, and every clone on the machine shares them.
CACHE=${ETCD_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator}
ETCD_BIN=$CACHE/etcd-$ETCD_VERSION/bin
# etcd_bin VERSION: the folder of etcd, etcdctl and etcdutl of that version
etcd_bin() { echo "$CACHE/etcd-$1/bin"; }
# etcd_module VERSION: the helper module that pins an extra etcd version (build/etcd-vX.Y)
etcd_module() { local v=$1; echo "etcd-${v%.*}"; }
# recipe_of MODULE_DIR: the hash of what a helper module builds with (its sources and go.sum),
# which keys its binaries beside the version: a change of plugins or of dependencies builds anew
recipe_of() { cat "$LOCAL_DIR/build/$1"/*.go "$LOCAL_DIR/build/$1/go.sum" | sha256sum | cut -c1-12; }
K8S_BIN=$CACHE/kubernetes-$KUBERNETES_VERSION-$(recipe_of k8s)/bin
COREDNS_BIN=$CACHE/coredns-$COREDNS_VERSION-$(recipe_of coredns)/bin
LPP_BIN=$CACHE/local-path-provisioner-$LOCAL_PATH_PROVISIONER_VERSION-$(recipe_of local-path-provisioner)/bin
PAUSE_BIN=$CACHE/pause-$PAUSE_VERSION/bin
TOOLS_BIN=$CACHE/tools
IMAGES=$CACHE/images

# Cluster state (pki, etcd data, containerd root, logs, pid files, kubeconfig) lives in
# the clone, in a git-ignored folder; make down removes it.
STATE=${ETCD_OPERATOR_STATE:-$ROOT/.local}
PKI=$STATE/pki
ETC=$STATE/etc
VAR=$STATE/var
RUN=$STATE/run
LOGS=$STATE/logs
KUBECONFIG_FILE=$STATE/kubeconfig
SOCK=$RUN/containerd/containerd.sock

CLUSTER_NAME=etcd-operator
NODE=etcd-operator-control-plane
NODE_IP=10.244.0.1 # address of the cni0 bridge; every server binds here or to 127.0.0.1
POD_CIDR=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
SVC_CIDR=10.96.0.0/16
DNS_IP=10.96.0.10
GUARD_CHAIN=EO-LOCAL-GUARD

PAUSE_IMAGE=registry.k8s.io/pause:$PAUSE_VERSION
ETCD_IMAGE=gcr.io/etcd-development/etcd:$ETCD_VERSION
COREDNS_IMAGE=registry.k8s.io/coredns/coredns:$COREDNS_VERSION
LPP_IMAGE=docker.io/rancher/local-path-provisioner:$LOCAL_PATH_PROVISIONER_VERSION

export PATH=$K8S_BIN:$ETCD_BIN:$TOOLS_BIN:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

T0=${T0:-$(date +%s%N)}
# ts MESSAGE: print MESSAGE with the seconds since the script started.
ts() {
	local ms=$((($(date +%s%N) - T0) / 1000000))
	printf '[%s %4d.%01ds] %s\n' "${SCRIPT_NAME:-local}" $((ms / 1000)) $((ms % 1000 / 100)) "$*"
}

die() {
	ts "ERROR: $*" >&2
	exit 1
}

# waitfor DESC TIMEOUT_SECONDS CMD...: poll CMD every 0.2 s until it succeeds or the deadline passes.
waitfor() {
	local desc=$1 timeout=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if [ $SECONDS -ge "$deadline" ]; then
			ts "TIMEOUT after ${timeout}s waiting for $desc"
			return 1
		fi
		sleep 0.2
	done
	ts "$desc: ok"
}

# supervisor_tag NAME: the $0 of the supervisor shell of daemon NAME. It names this
# clone's state folder, so a pid file can never match another cluster's or a recycled pid.
supervisor_tag() { echo "etcd-operator-local[$STATE]:$1"; }

# alive NAME: the supervisor recorded in $RUN/NAME.pid is running (pid == process group id).
alive() {
	local pid
	[ -f "$RUN/$1.pid" ] || return 1
	pid=$(cat "$RUN/$1.pid")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	[[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" == *"$(supervisor_tag "$1")"* ]]
}

DAEMONS="containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy"

# any_alive: at least one daemon of this clone's cluster runs.
any_alive() {
	local d
	for d in $DAEMONS; do alive "$d" && return 0; done
	return 1
}

# Prometheus' build tags (hack/prometheus.sh, hack/warm-builds.sh): its plugins/ package leaves
# out every service discovery but Kubernetes' (file and HTTP discovery always stay)
PROMETHEUS_TAGS=remove_all_sd,enable_kubernetes_sd

# hash_of FILE...: short content hash, used to key cached tools and images by their recipe.
hash_of() { cat "$@" | sha256sum | cut -c1-12; }

# apt_install PKG...: Debian's packages (as root), with apt-get update first. The project's
# scripts take turns on one lock: CI runs two at once (the kind part's base rootfs beside the
# local node's make test), and apt-get fails at once on a lock another apt-get holds.
apt_install() {
	mkdir -p /run/lock
	(
		flock 9
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
	) 9>/run/lock/etcd-operator-apt.lock
}

# tool_from_module NAME VERSION MOD PKG LDFLAGS [TAGS]: builds PKG of the tool module MOD
# (hack/tools/NAME) into the tool cache, once per version, go.sum and calling script (seconds
# when cached), links it as bin/NAME and sets TOOL to its path. Two builds of one tool at once
# (CI's two clusters each run make e2e) take turns on a lock: the second finds it built.
tool_from_module() {
	local name=$1 version=$2 mod=$3 pkg=$4 ld=$5 tags=${6:-} start=$SECONDS
	# the recipe: the module's sums, the calling script and this function
	TOOL=$TOOLS_BIN/$name-$version-$({ cat "$mod/go.sum" "$0"; declare -f tool_from_module; } | sha256sum | cut -c1-12)/$name
	mkdir -p "$(dirname "$TOOL")"
	(
		flock 9
		if [ ! -x "$TOOL" ]; then
			ts "building $name $version${tags:+ with $tags} (first time: a few minutes)"
			(cd "$mod" && CGO_ENABLED=0 go build -trimpath -tags "$tags" -ldflags "$ld" -o "$TOOL.part" "$pkg")
			mv "$TOOL.part" "$TOOL"
			ts "built $name $version in $((SECONDS - start))s"
		fi
	) 9>"$TOOL.lock"
	mkdir -p "$ROOT/bin"
	ln -sfn "$TOOL" "$ROOT/bin/$name"
}

# cri_tool: path of the small CRI client built from hack/local/build/k8s/crirm.
cri_tool() { echo "$TOOLS_BIN/crirm-$(hash_of "$LOCAL_DIR/build/k8s/crirm/main.go" "$LOCAL_DIR/build/k8s/go.sum")"; }
# images_dir: folder of the image tarballs for this version set and image recipe.
images_dir() { echo "$IMAGES/$(hash_of "$LOCAL_DIR/images.sh" "$ROOT/hack/tools/mkimage/main.go" "$LOCAL_DIR/versions.env" <(echo "$COREDNS_BIN $LPP_BIN"))"; }
# mkimage_tool: path of hack/tools/mkimage built for this content.
mkimage_tool() { echo "$TOOLS_BIN/mkimage-$(hash_of "$ROOT/hack/tools/mkimage/main.go")"; }
