#!/usr/bin/env bash
# The kind path: a Docker engine (the host's, or the project's own dockerd: engine.sh), the
# pinned kind from Go modules (into the cache), the offline node image (node-image.sh), and
# the cluster "etcd-operator" with one control plane and $KIND_WORKERS workers, its
# kubeconfig where the local node's would be. Every image it runs is preloaded: nothing is
# pulled. kind's default StorageClass is named "standard" and its CoreDNS keeps kubeadm's
# 30 s cache, as on the local node, so the e2e tests run unchanged. Idempotent.
set -euo pipefail
SCRIPT_NAME=kind-up
. "$(dirname "$0")/lib.sh"

mkdir -p "$STATE"
"$KIND_DIR/engine.sh" up
use_engine
if [ ! -x "$KIND_BIN/kind" ]; then
	ts "installing kind $KIND_VERSION into $KIND_BIN"
	GOBIN=$KIND_BIN CGO_ENABLED=0 go install "sigs.k8s.io/kind@$KIND_VERSION"
fi
"$LOCAL_DIR/build.sh" kubectl
"$KIND_DIR/node-image.sh"
NODE_IMAGE=$(node_image)

if ! grep -qx "$CLUSTER_NAME" <<<"$(kind get clusters 2>/dev/null)"; then
	config=$STATE/kind-config.yaml
	{
		echo "kind: Cluster"
		echo "apiVersion: kind.x-k8s.io/v1alpha4"
		echo "networking:"
		echo "  podSubnet: $KIND_POD_SUBNET"
		echo "nodes:"
		echo "- role: control-plane"
		for _ in $(seq "$KIND_WORKERS"); do echo "- role: worker"; done
		# a changed Secret reaches the pods that mount it on the kubelet's sync of each pod:
		# every 10 s (the default is a minute), as on the local node (hack/local/up.sh)
		printf 'kubeadmConfigPatches:\n- |\n  kind: KubeletConfiguration\n  syncFrequency: 10s\n'
		# a node that stops is NotReady after 20 s (the default is 50): its kubelet renews its
		# lease every 5 s (a quarter of the lease), so four renewals in a row must be missed.
		# The multi-node tests stop nodes and wait for that (docs/kind.md).
		printf '  nodeLeaseDurationSeconds: 20\n'
		if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
			# Kubernetes >= 1.35 refuses cgroup v1 unless told otherwise
			printf '  failCgroupV1: false\n'
		fi
		printf 'kubeadmConfigPatchesJSON6902:\n- group: kubeadm.k8s.io\n  version: v1beta4\n  kind: ClusterConfiguration\n'
		printf '  patch: |\n    - op: add\n      path: /controllerManager/extraArgs/-\n      value: {name: node-monitor-grace-period, value: 20s}\n'
		if ! (((0x$(awk '/^CapBnd:/ {print $2}' /proc/self/status) >> 24) & 1)); then
			# without CAP_SYS_RESOURCE nothing may lower oom_score_adj: containerd must not try
			printf 'containerdConfigPatches:\n- |\n  [plugins."io.containerd.grpc.v1.cri"]\n    restrict_oom_score_adj = true\n'
		fi
	} >"$config"
	# kind creates the Docker network "kind" when missing and never removes it: down.sh does, if up made it
	docker network inspect kind >/dev/null 2>&1 || touch "$STATE/kind-network-created"
	ts "creating kind cluster $CLUSTER_NAME (1 control plane, $KIND_WORKERS workers, image $NODE_IMAGE)"
	kind create cluster --name "$CLUSTER_NAME" --image "$NODE_IMAGE" --config "$config" --kubeconfig "$KUBECONFIG_FILE"
	ts "kind cluster created"
fi
kind export kubeconfig --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_FILE" 2>/dev/null
export KUBECONFIG=$KUBECONFIG_FILE
waitfor "nodes Ready" 180 kubectl wait --for=condition=Ready node --all --timeout=2s
waitfor "CoreDNS Available" 180 kubectl -n kube-system wait --for=condition=Available deploy/coredns --timeout=2s
waitfor "local-path-provisioner Available" 180 kubectl -n local-path-storage wait --for=condition=Available deploy/local-path-provisioner --timeout=2s
ts "kind cluster $CLUSTER_NAME is up: export KUBECONFIG=$KUBECONFIG_FILE$([ -z "${DOCKER_HOST:-}" ] || echo " DOCKER_HOST=$DOCKER_HOST")"
