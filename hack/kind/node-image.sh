#!/usr/bin/env bash
# Builds the kind node image offline, from the binaries hack/local/build.sh caches, with no
# registry: what `kind build node-image` does, which cannot run here (it pulls its base and
# the control plane's images). The image is tagged $(node_image), a name keyed by the pinned
# versions and this recipe, and is rebuilt only when one of them changes.
#   1. base: a Debian rootfs by debootstrap (systemd, containerd, runc, CNI plugins, iptables)
#      with kind's base files from the pinned kind module (entrypoint, units, containerd
#      configuration), cached as a tarball in $CACHE/kind-node/
#   2. images: the control plane, kube-proxy, CoreDNS, etcd, pause, local-path-provisioner,
#      busybox and the operator's etcd image, as docker-archive tarballs by hack/tools/mkimage,
#      tagged as `kubeadm config images list` names them (etcd and CoreDNS there are kubeadm's
#      tags, run with the project's pinned etcd and CoreDNS binaries)
#   3. node: the base with kubeadm, kubelet and kubectl, /kind/version, the default CNI
#      (manifests/pod-network.yaml) and StorageClass manifests, and every image imported into
#      its containerd, committed
set -euo pipefail
SCRIPT_NAME=node-image
. "$(dirname "$0")/lib.sh"
# node-image.sh base: step 1 alone, which needs no engine. .ci/run starts it with the run, at a
# lower priority, so that debootstrap's downloads and unpacking overlap the unit tests; the
# whole build, later, waits for it on the base's lock and finds the base built.
mode=${1:-image}
if [ "$mode" != base ]; then
	use_engine
	IMAGE=$(node_image)
	if docker image inspect "$IMAGE" >/dev/null 2>&1; then
		ts "node image $IMAGE present"
		exit 0
	fi
fi
start=$SECONDS
WORK=$CACHE/kind-node
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_KEY=$(hash_of "$KIND_DIR/node-image.sh" <(echo "$KIND_VERSION $DEBIAN_SUITE"))
BASE_TAR=$WORK/base-$BASE_KEY.tar
BASE_IMAGE=etcd-operator/kind-base:$BASE_KEY
MKIMAGE=$(mkimage_tool)
mkdir -p "$WORK"

############################################################ 1. base rootfs
PKGS=systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,nftables,iproute2,ethtool,conntrack,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,procps,jq,curl,e2fsprogs,socat,ebtables
(
	flock 9
	if [ ! -f "$BASE_TAR" ]; then
		command -v debootstrap >/dev/null && command -v jq >/dev/null || {
			ts "installing Debian's debootstrap and jq"
			apt_install debootstrap jq
		}
		kind_src=$(cd "$WORK" && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)
		F=$kind_src/images/base/files
		[ -d "$F" ] || die "kind's base files not found in $kind_src (go mod download sigs.k8s.io/kind@$KIND_VERSION)"
		R=$WORK/rootfs
		# a debootstrap ended midway (CI ends a base build still under way) can leave the
		# target's /proc and /sys mounted
		findmnt -rno TARGET | { grep -F "$R/" || true; } | sort -r | while read -r m; do umount -l "$m"; done
		rm -rf "$R"
		ts "debootstrap $DEBIAN_SUITE into $R"
		debootstrap --variant=minbase --include=$PKGS "$DEBIAN_SUITE" "$R" "$DEBIAN_MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
			{ tail -n 20 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log $WORK/debootstrap.log)"; }
		# kind's base image files (the module's files are read-only: copy, then set modes)
		install -m 0755 "$F"/usr/local/bin/* "$R/usr/local/bin/"
		mkdir -p "$R/kind" "$R/etc/containerd" "$R/etc/default" "$R/etc/sysctl.d" "$R/etc/systemd/system/kubelet.service.d"
		cp -r "$F/kind/." "$R/kind/"
		chmod -R u+w "$R/kind"
		find "$R/kind" -type d -exec chmod 0755 {} +
		chmod 0755 "$R"/kind/bin/*
		cp "$F/etc/crictl.yaml" "$R/etc/"
		cp "$F/etc/default/"* "$R/etc/default/"
		cp "$F/etc/sysctl.d/"* "$R/etc/sysctl.d/"
		# a node routes pod traffic; its network namespace starts with the host's ip_forward,
		# which is 0 where nothing enabled it (the project's dockerd runs with --ip-forward=false)
		printf 'net.ipv4.ip_forward=1\n' >"$R/etc/sysctl.d/20-ip-forward.conf"
		cp "$F/etc/systemd/system/"*.service "$F/etc/systemd/system/"*.slice "$R/etc/systemd/system/"
		cp "$F/etc/systemd/system/kubelet.service.d/"* "$R/etc/systemd/system/kubelet.service.d/"
		# Debian's containerd 1.6 with kind's configuration; the sandbox image is the pinned pause
		sed "s#sandbox_image = \".*\"#sandbox_image = \"$PAUSE_IMAGE\"#" "$F/etc/containerd/config.toml" >"$R/etc/containerd/config.toml"
		chmod -R u+w,go+r "$R/etc"
		for b in containerd ctr containerd-shim-runc-v2; do ln -sf "/usr/bin/$b" "$R/usr/local/bin/$b"; done
		mkdir -p "$R/opt/cni"
		rm -rf "$R/opt/cni/bin"
		ln -s /usr/lib/cni "$R/opt/cni/bin"
		chroot "$R" /bin/bash -euo pipefail -c '
			# the units kind disables in its base image
			find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
			rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
				/lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
				/lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
			echo ReadKMsg=no >>/etc/systemd/journald.conf
			systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
			systemctl mask systemd-binfmt.service >/dev/null 2>&1
			mkdir -p /etc/kubernetes/manifests
			ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer | length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" |
				jq "del(.process.rlimits)" >/etc/containerd/cri-base.json
			apt-get clean
			rm -rf /var/lib/apt/lists/*'
		tar -C "$R" -cf "$BASE_TAR.part" .
		mv "$BASE_TAR.part" "$BASE_TAR"
		rm -rf "$R"
		ts "base rootfs packed into $BASE_TAR"
	fi
) 9>"$WORK/base.lock"
[ "$mode" != base ] || exit 0
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
	ts "importing $BASE_IMAGE"
	docker import --change 'ENV container=docker' --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
		"$BASE_TAR" "$BASE_IMAGE" >/dev/null
fi

############################################################ 2. images
"$LOCAL_DIR/build.sh" kubeadm
"$LOCAL_DIR/images.sh"
IMG=$(images_dir)
OUT=$WORK/images-$(hash_of "$KIND_DIR/node-image.sh" "$LOCAL_DIR/versions.env" "$ROOT/hack/tools/mkimage/main.go" <(echo "$BASE_KEY $K8S_BIN $COREDNS_BIN $LPP_BIN"))
mkdir -p "$OUT"
list=$("$K8S_BIN/kubeadm" config images list --kubernetes-version "$KUBERNETES_VERSION")
ref_of() { grep -E "/$1:" <<<"$list" || die "kubeadm config images list names no $1 image"; }
PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# pack NAME REF MKIMAGE-ARGS...: the tarball NAME.tar of image REF, unless present
pack() {
	local name=$1 ref=$2
	shift 2
	[ -f "$OUT/$name.tar" ] && return 0
	"$MKIMAGE" -o "$OUT/$name.tar.part" -ref "$ref" "$@" >/dev/null
	mv "$OUT/$name.tar.part" "$OUT/$name.tar"
	ts "packed $ref"
}
# bin_layer NAME FILE DEST: a layer folder holding FILE at DEST
bin_layer() {
	local d=$OUT/.layer-$1
	rm -rf "$d"
	mkdir -p "$d$(dirname "$3")"
	cp "$2" "$d$3"
	echo "$d"
}
for c in kube-apiserver kube-controller-manager kube-scheduler; do
	pack "$c" "$(ref_of "$c")" -env "$PATH_ENV" -layer "$(bin_layer "$c" "$K8S_BIN/$c" "/usr/local/bin/$c")"
done
# kube-proxy needs iptables: the base system under it (the pod network's script runs in it too)
KUBE_PROXY_IMAGE=$(ref_of kube-proxy)
pack kube-proxy "$KUBE_PROXY_IMAGE" -env "$PATH_ENV" -layer "$BASE_TAR" \
	-layer "$(bin_layer kube-proxy "$K8S_BIN/kube-proxy" /usr/local/bin/kube-proxy)"
etcd_layer=$OUT/.layer-etcd
rm -rf "$etcd_layer"
mkdir -p "$etcd_layer/usr/local/bin" "$etcd_layer/var/lib/etcd" "$etcd_layer/tmp"
chmod 1777 "$etcd_layer/tmp"
cp "$ETCD_BIN/etcd" "$ETCD_BIN/etcdctl" "$ETCD_BIN/etcdutl" "$etcd_layer/usr/local/bin/"
pack kubeadm-etcd "$(ref_of etcd)" -env "$PATH_ENV" -layer "$etcd_layer"
pack kubeadm-coredns "$(ref_of coredns)" -entrypoint /coredns -layer "$(bin_layer coredns "$COREDNS_BIN/coredns" /coredns)"
kubeadm_pause=$(ref_of pause)
if [ "$kubeadm_pause" != "$PAUSE_IMAGE" ]; then
	pack kubeadm-pause "$kubeadm_pause" -entrypoint /pause -user 65535:65535 -layer "$(bin_layer pause "$PAUSE_BIN/pause" /pause)"
fi
rm -rf "$OUT"/.layer-*

############################################################ 3. the node
manifests=$WORK/manifests-$$
mkdir -p "$manifests"
sed "s|@KUBE_PROXY_IMAGE@|$KUBE_PROXY_IMAGE|" "$KIND_DIR/manifests/pod-network.yaml" >"$manifests/default-cni.yaml"
sed -e "s|@LPP_IMAGE@|$LPP_IMAGE|" -e "s|@BUSYBOX_IMAGE@|$BUSYBOX_IMAGE|g" -e "s|@LPP_PATH@|/var/local-path-provisioner|" \
	"$LOCAL_DIR/manifests/local-path-storage.yaml" >"$manifests/default-storage.yaml"
C=etcd-operator-node-build-$$
cleanup() {
	docker rm -f "$C" >/dev/null 2>&1 || true
	rm -rf "$manifests"
}
trap cleanup EXIT
docker run -d --privileged --network none --name "$C" --entrypoint sleep "$BASE_IMAGE" infinity >/dev/null
for b in kubeadm kubelet kubectl; do docker cp "$K8S_BIN/$b" "$C:/usr/bin/$b"; done
docker exec "$C" bash -c "chown root:root /usr/bin/kube*; chmod 0755 /usr/bin/kube*; printf %s '$KUBERNETES_VERSION' >/kind/version; mkdir -p /kind/manifests"
docker cp "$manifests/default-cni.yaml" "$C:/kind/manifests/default-cni.yaml"
docker cp "$manifests/default-storage.yaml" "$C:/kind/manifests/default-storage.yaml"
docker exec -d "$C" containerd
deadline=$((SECONDS + 60))
until docker exec "$C" ctr version >/dev/null 2>&1; do
	[ $SECONDS -lt "$deadline" ] || die "containerd in the build container did not start in 60s"
	sleep 0.2
done
for t in "$OUT"/*.tar "$IMG"/*.tar; do
	docker exec -i "$C" ctr -n k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack - <"$t" >/dev/null
done
ts "imported $(docker exec "$C" ctr -n k8s.io images ls -q | grep -vc '^sha256:') image names into the node's containerd"
docker exec "$C" pkill -x containerd
deadline=$((SECONDS + 30))
while docker exec "$C" pgrep -x containerd >/dev/null; do
	[ $SECONDS -lt "$deadline" ] || die "containerd in the build container did not stop in 30s"
	sleep 0.2
done
committed=$(docker commit "$C")
# kind's STOPSIGNAL (systemd halts on SIGRTMIN+3); docker commit cannot set it
ctx=$WORK/ctx-$$
mkdir -p "$ctx"
printf 'FROM %s\nENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]\nCMD []\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\n' "$committed" >"$ctx/Dockerfile"
DOCKER_BUILDKIT=0 docker build -q --network none -t "$IMAGE" "$ctx" >/dev/null 2>"$ctx/build.err" ||
	{ cat "$ctx/build.err" >&2; die "docker build of the node image failed"; }
rm -rf "$ctx"
docker rmi "$committed" >/dev/null 2>&1 || true
ts "node image $IMAGE built in $((SECONDS - start))s"

# what earlier versions or recipes left: their node and base images, tarballs and image folders
for old in $(docker images --format '{{.Repository}}:{{.Tag}}' etcd-operator/kind-node) $(docker images --format '{{.Repository}}:{{.Tag}}' etcd-operator/kind-base); do
	if [ "$old" != "$IMAGE" ] && [ "$old" != "$BASE_IMAGE" ]; then
		if docker rmi "$old" >/dev/null 2>&1; then ts "removed the outdated image $old"; fi
	fi
done
for old in "$WORK"/base-*.tar "$WORK"/images-*; do
	if [ -e "$old" ] && [ "$old" != "$BASE_TAR" ] && [ "$old" != "$OUT" ]; then
		rm -rf "$old"
		ts "removed the outdated $old"
	fi
done
