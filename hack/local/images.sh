#!/usr/bin/env bash
# Packs the images the local node runs, from the cached binaries, as docker-archive
# tarballs made by hack/tools/mkimage (no Docker, no registry), tagged with their real
# names so manifests stay the ones a kind or cloud user applies:
#   registry.k8s.io/pause, registry.k8s.io/coredns/coredns, gcr.io/etcd-development/etcd,
#   docker.io/rancher/local-path-provisioner and docker.io/library/busybox (its helper).
# Tarballs are cached by version and by a hash of this recipe; present ones are kept.
set -euo pipefail
SCRIPT_NAME=images
. "$(dirname "$0")/lib.sh"

OUT=$(images_dir)
MKIMAGE=$(mkimage_tool)
[ -x "$MKIMAGE" ] || die "$MKIMAGE missing: run hack/local/build.sh first"
mkdir -p "$OUT"

# image_file NAME: path of the tarball of image NAME (pause, etcd, etcd-<version>, coredns,
# local-path-provisioner, busybox).
image_file() { echo "$OUT/$1.tar"; }

# rootfs_base DIR: the distroless-like base every image here shares: /etc/passwd and
# /etc/group with root, nobody and nonroot (65532), and a world-writable /tmp.
rootfs_base() {
	mkdir -p "$1/etc" "$1/tmp"
	chmod 1777 "$1/tmp"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$1/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$1/etc/group"
}

# pack NAME REF MKIMAGE-FLAGS...: run the recipe function recipe_NAME (recipe_$RECIPE when set)
# in a scratch folder, then mkimage with its layers; skipped when the tarball is cached.
pack() {
	local name=$1 ref=$2
	shift 2
	local out work
	out=$(image_file "$name")
	[ -f "$out" ] && return 0
	ts "packing $ref"
	work=$(mktemp -d "$OUT/.work-$name.XXXXXX")
	"recipe_${RECIPE:-$name}" "$work"
	local layers=()
	for l in "$work"/layer*; do layers+=(-layer "$l"); done
	"$MKIMAGE" -o "$out" -ref "$ref" "${layers[@]}" "$@" >/dev/null
	rm -rf "$work"
}

recipe_pause() {
	mkdir -p "$1/layer0"
	cp "$PAUSE_BIN/pause" "$1/layer0/pause"
}

# etcd like upstream's Dockerfile (distroless static base; etcd, etcdctl and etcdutl in
# /usr/local/bin; WORKDIR /var/etcd then /var/lib/etcd): no shell, no package manager.
# recipe_etcd packs ETCD_BIN, or the folder in $RECIPE_ETCD_BIN for an extra version.
recipe_etcd() {
	local bin=${RECIPE_ETCD_BIN:-$ETCD_BIN}
	rootfs_base "$1/layer0"
	mkdir -p "$1/layer0/var/etcd" "$1/layer0/var/lib/etcd" "$1/layer1/usr/local/bin"
	cp "$bin/etcd" "$bin/etcdctl" "$bin/etcdutl" "$1/layer1/usr/local/bin/"
}

recipe_coredns() {
	rootfs_base "$1/layer0"
	mkdir -p "$1/layer1"
	cp "$COREDNS_BIN/coredns" "$1/layer1/coredns"
}

recipe_local-path-provisioner() {
	rootfs_base "$1/layer0"
	mkdir -p "$1/layer1/usr/bin"
	cp "$LPP_BIN/local-path-provisioner" "$1/layer1/usr/bin/local-path-provisioner"
}

# busybox from Debian's busybox-static: the helper pod runs /bin/sh /script/setup.
recipe_busybox() {
	local a
	rootfs_base "$1/layer0"
	mkdir -p "$1/layer0/bin" "$1/layer0/root"
	cp /bin/busybox "$1/layer0/bin/busybox"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -s busybox "$1/layer0/bin/$a"
	done
}

PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
pack pause "$PAUSE_IMAGE" -entrypoint /pause -user 65535:65535
pack etcd "$ETCD_IMAGE" -env "$PATH_ENV" -workdir /var/lib/etcd -cmd /usr/local/bin/etcd
for v in $ETCD_EXTRA_VERSIONS; do
	RECIPE=etcd RECIPE_ETCD_BIN=$(etcd_bin "$v") pack "etcd-$v" "gcr.io/etcd-development/etcd:$v" \
		-env "$PATH_ENV" -workdir /var/lib/etcd -cmd /usr/local/bin/etcd
done
pack coredns "$COREDNS_IMAGE" -env "$PATH_ENV" -entrypoint /coredns
pack local-path-provisioner "$LPP_IMAGE" -env "$PATH_ENV" -cmd local-path-provisioner
pack busybox "$BUSYBOX_IMAGE" -env "$PATH_ENV" -cmd sh
ts "images present in $OUT"
