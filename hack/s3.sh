#!/usr/bin/env bash
# make s3: deploys a real S3-compatible store into the cluster, for EtcdBackups to S3 and the
# e2e tests of them (test/e2e runs this script when it needs the store):
#   versitygw (github.com/versity/versitygw, Apache-2.0) with its posix backend, built from Go
#   modules (hack/local/build/versitygw pins VERSITYGW_VERSION of versions.env), with
#   hack/tools/s3bucket, packed by hack/tools/mkimage into one image and loaded into the nodes
#   like the operator's (hack/image.sh); then hack/s3/versitygw.yaml: the namespace etcd-s3, the
#   Service versitygw, the bucket etcd-backups, the credentials Secret. It returns once the
#   store's pod is Ready, which it is once the bucket exists.
# Run again, it rebuilds nothing that is cached, and redeploys only when the image changed.
set -euo pipefail
SCRIPT_NAME=s3
. "$(dirname "$0")/local/lib.sh"

S3_NS=etcd-s3
VGW_MOD=$LOCAL_DIR/build/versitygw
grep -qE "^[[:space:]]*(require[[:space:]]+)?github.com/versity/versitygw $VERSITYGW_VERSION( |$)" "$VGW_MOD/go.mod" ||
	die "hack/local/build/versitygw/go.mod does not require github.com/versity/versitygw $VERSITYGW_VERSION (versions.env)"
export KUBECONFIG=$KUBECONFIG_FILE
[ -f "$KUBECONFIG" ] || die "no cluster is up: run make up"
mode=$("$ROOT/hack/cluster.sh" mode)

# gobuild DIR OUT PKG: a static build into a temporary file, then an atomic rename.
gobuild() {
	local start=$SECONDS
	mkdir -p "$(dirname "$2")"
	ts "building $(basename "$2") ($3)"
	(cd "$1" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$2.part" "$3")
	mv "$2.part" "$2"
	ts "built $(basename "$2") in $((SECONDS - start))s"
}
VGW_BIN=$CACHE/versitygw-$VERSITYGW_VERSION/bin/versitygw
[ -x "$VGW_BIN" ] || gobuild "$VGW_MOD" "$VGW_BIN" github.com/versity/versitygw/cmd/versitygw
S3BUCKET=$TOOLS_BIN/s3bucket-$(hash_of "$ROOT/hack/tools/s3bucket/main.go" "$ROOT/go.sum")
[ -x "$S3BUCKET" ] || gobuild "$ROOT" "$S3BUCKET" ./hack/tools/s3bucket
mk=$(mkimage_tool)
[ -x "$mk" ] || gobuild "$ROOT" "$mk" ./hack/tools/mkimage

# the image's tag says what is in it: the versitygw version and the recipe's hash
recipe=$(hash_of "$0" "$S3BUCKET" "$VGW_BIN" "$ROOT/hack/tools/mkimage/main.go")
IMAGE=etcd-operator-s3:versitygw-$VERSITYGW_VERSION-$recipe
tarball=$IMAGES/s3/$recipe.tar
if [ ! -f "$tarball" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/base/etc" "$work/base/tmp" "$work/bin/usr/local/bin" "$IMAGES/s3"
	chmod 1777 "$work/base/tmp"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$work/base/etc/passwd"
	printf 'root:x:0:\nnonroot:x:65532:\n' >"$work/base/etc/group"
	cp "$VGW_BIN" "$work/bin/usr/local/bin/versitygw"
	cp "$S3BUCKET" "$work/bin/usr/local/bin/s3bucket"
	"$mk" -o "$tarball.part" -ref "$IMAGE" -layer "$work/base" -layer "$work/bin" -user 65532:65532 \
		-entrypoint /usr/local/bin/versitygw >/dev/null
	mv "$tarball.part" "$tarball"
	ts "packed $IMAGE"
fi

# loaded into the nodes unless the store already runs this image
running=$(kubectl -n "$S3_NS" get deploy versitygw -o jsonpath='{.spec.template.spec.containers[0].image}' 2>/dev/null || true)
if [ "$running" != "$IMAGE" ]; then
	if [ "$mode" = kind ]; then
		. "$ROOT/hack/kind/lib.sh"
		use_engine
		docker load -i "$tarball" >/dev/null
		kind load docker-image "$IMAGE" --name "$CLUSTER_NAME"
	else
		ctr -a "$SOCK" -n k8s.io images import "$tarball" >/dev/null
	fi
	ts "loaded $IMAGE into the cluster"
fi
sed "s|S3_STORE_IMAGE|$IMAGE|g" "$ROOT/hack/s3/versitygw.yaml" | kubectl apply -f - >/dev/null
if ! kubectl -n "$S3_NS" rollout status deploy/versitygw --timeout=180s; then
	kubectl -n "$S3_NS" get pods -o wide
	kubectl -n "$S3_NS" logs deploy/versitygw --all-containers --tail=50 || true
	die "the S3 store did not become ready"
fi
ts "S3 store ready: http://versitygw.$S3_NS.svc.cluster.local:7070, bucket etcd-backups (example/etcdbackup-s3.yaml)"
