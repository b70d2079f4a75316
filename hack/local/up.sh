#!/usr/bin/env bash
# Starts the project's single-node Kubernetes on this machine (no Docker, no registry):
# Debian's containerd and runc, the control plane, kubelet and kube-proxy built from Go
# modules, CoreDNS, and the default StorageClass "standard" (local-path-provisioner).
# Idempotent: installs missing Debian packages, builds missing binaries and images,
# starts missing daemons, and waits for node Ready, working cluster DNS and the provisioner.
# COREDNS_TTL overrides CoreDNS's TTL and cache (default 30 s, as upstream).
set -euo pipefail
SCRIPT_NAME=up
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || die "the local node needs root (containerd, kubelet, iptables); on a machine with Docker use the kind path"

############################################################ 1. Debian packages
# command or file -> package
PKGS="containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins iptables:iptables
conntrack:conntrack socat:socat ethtool:ethtool ebtables:ebtables /bin/busybox:busybox-static jq:jq
openssl:openssl gcc:gcc strip:binutils ip:iproute2 ss:iproute2 findmnt:util-linux setsid:util-linux
sysctl:procps ps:procps promtool:prometheus"
missing=""
for p in $PKGS; do
	what=${p%%:*}
	case $what in
	/*) [ -e "$what" ] ;;
	*) command -v "$what" >/dev/null ;;
	esac || missing="$missing ${p#*:}"
done
if [ -n "$missing" ]; then
	ts "installing Debian packages:$missing"
	# shellcheck disable=SC2086 # a list of packages
	apt_install $missing
	# prometheus is there for promtool (make alerts-test): its own service is not wanted
	case " $missing " in *" prometheus "*)
		if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
			systemctl disable --now prometheus >/dev/null 2>&1 || true
		fi ;;
	esac
fi

############################################################ 2. binaries and images
"$LOCAL_DIR/build.sh"
"$LOCAL_DIR/images.sh"
IMG=$(images_dir)
CRI=$(cri_tool)

############################################################ 3. leftovers of a cluster that is not running
if ! any_alive; then
	if [ -d "$STATE" ]; then
		ts "state of a cluster that is not running found in $STATE: cleaning it up"
		"$LOCAL_DIR/down.sh"
	fi
	# another cluster (another clone's, say) holding the node's ports would make ours fail obscurely
	# (output captured, not piped into grep -q: under pipefail an early-exiting grep can make
	# the pipeline fail)
	held=$(ss -ltnpH "( sport = :6443 or sport = :2379 or sport = :10250 )")
	if [ -n "$held" ]; then
		echo "$held" >&2
		die "ports 6443/2379/10250 are in use by processes this clone did not start (another cluster?); stop it first"
	fi
fi
mkdir -p "$PKI" "$ETC/cni/net.d" "$VAR" "$RUN" "$LOGS"

############################################################ 4. PKI and kubeconfigs
ossl() { openssl "$@" 2>/dev/null; }
# cert NAME CN O EKU [SAN]: a leaf certificate signed by the cluster CA, unless present
cert() {
	local n=$1 cn=$2 o=$3 eku=$4 san=${5:-}
	[ -f "$PKI/$n.crt" ] && return 0
	ossl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$PKI/$n.key" -out "$PKI/$n.csr" -subj "/CN=$cn${o:+/O=$o}"
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$eku"
		[ -z "$san" ] || echo "subjectAltName=$san"
	} >"$PKI/$n.ext"
	ossl x509 -req -in "$PKI/$n.csr" -CA "$PKI/${6:-ca}.crt" -CAkey "$PKI/${6:-ca}.key" -CAcreateserial -out "$PKI/$n.crt" -days 3650 -extfile "$PKI/$n.ext"
	rm -f "$PKI/$n.csr" "$PKI/$n.ext"
}
# ca NAME CN: a self-signed CA, unless present
ca() {
	[ -f "$PKI/$1.crt" ] && return 0
	ossl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$PKI/$1.key" -out "$PKI/$1.crt" -days 3650 \
		-subj "/CN=$2" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign"
}
[ -f "$PKI/ca.crt" ] || ts "generating PKI in $PKI"
ca ca "$CLUSTER_NAME-ca"
ca front-proxy-ca "$CLUSTER_NAME-front-proxy-ca"
cert apiserver kube-apiserver "" serverAuth \
	"DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:10.96.0.1,IP:$NODE_IP,IP:127.0.0.1"
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters clientAuth
cert admin kubernetes-admin system:masters clientAuth
cert controller-manager system:kube-controller-manager "" clientAuth
cert scheduler system:kube-scheduler "" clientAuth
cert kube-proxy system:kube-proxy "" clientAuth
cert kubelet-client "system:node:$NODE" system:nodes clientAuth
cert kubelet-server "$NODE" "" serverAuth "DNS:$NODE,IP:$NODE_IP"
cert front-proxy-client front-proxy-client "" clientAuth "" front-proxy-ca
[ -f "$PKI/sa.key" ] || { ossl genrsa -out "$PKI/sa.key" 2048 && ossl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"; }

# kcfg FILE USER CERT: a kubeconfig with client certificate CERT, unless present
kcfg() {
	[ -f "$1" ] && return 0
	cat >"$1.part" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER_NAME
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$3.crt")
    client-key-data: $(base64 -w0 "$PKI/$3.key")
contexts:
- name: $CLUSTER_NAME
  context: {cluster: $CLUSTER_NAME, user: $2}
current-context: $CLUSTER_NAME
EOF
	chmod 600 "$1.part"
	mv "$1.part" "$1"
}
kcfg "$KUBECONFIG_FILE" kubernetes-admin admin
kcfg "$ETC/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
kcfg "$ETC/scheduler.kubeconfig" system:kube-scheduler scheduler
kcfg "$ETC/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
kcfg "$ETC/kubelet.kubeconfig" "system:node:$NODE" kubelet-client
export KUBECONFIG=$KUBECONFIG_FILE

############################################################ 5. configuration files
# put FILE: write stdin to FILE only when the content changed (kube-proxy exits when its config is touched)
put() {
	local t
	t=$(mktemp "$1.XXXXXX")
	cat >"$t"
	if cmp -s "$t" "$1"; then rm -f "$t"; else mv "$t" "$1"; fi
}
put "$ETC/containerd.toml" <<EOF
version = 2
root = "$VAR/containerd"
state = "$RUN/containerd"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$VAR/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # This VM's capability bounding set lacks CAP_SYS_RESOURCE: nothing may lower oom_score_adj,
  # and runc fails pod sandboxes ("can't get final child's PID from pipe: EOF") unless restricted.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUN/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$ETC/cni/net.d"
EOF
put "$ETC/cni/net.d/10-$CLUSTER_NAME.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CLUSTER_NAME",
  "plugins": [
    { "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$VAR/cni/networks",
                "ranges": [[{ "subnet": "$POD_CIDR", "gateway": "$NODE_IP" }]],
                "routes": [{ "dst": "0.0.0.0/0" }] } },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
# pods with dnsPolicy Default (CoreDNS) get no upstream nameserver: nothing leaves the host
printf 'options ndots:1\n' | put "$ETC/resolv.conf"
put "$ETC/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $PKI/kubelet-server.crt
tlsPrivateKeyFile: $PKI/kubelet-server.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$SOCK
# cgroup v1 host without systemd
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: $ETC/resolv.conf
podLogsDir: $VAR/log/pods
volumePluginDir: $VAR/kubelet-plugins/volume/exec
serializeImagePulls: false
# A changed Secret or ConfigMap reaches the pods that mount it on the kubelet's periodic sync
# of each pod: every 10-15 s here, against 60-90 s by default. The end-to-end suite's TLS
# tests wait for it, and its operator's --client-ca-overlap (test/e2e/deploy) counts on it.
syncFrequency: 10s
maxPods: 110
# the default -999 needs CAP_SYS_RESOURCE, which this VM does not grant
oomScoreAdj: 0
# Disk thresholds in bytes, not a share: this node's disk is a VM's, whose nominal size (252G
# here) is far above what it has free (53-80G seen), and 5% of it evicted every pod of the
# suite at 13.5G free while a cold run's caches filled the disk (2026-11-29). kind's nodes turn
# disk eviction off; here it stays for a disk that is really full.
evictionHard: {memory.available: 100Mi, nodefs.available: 1Gi, imagefs.available: 1Gi}
# never: the node is offline, so an image collected (pause among them) cannot be pulled again
# and every pod that needs it would wait for ever
imageGCHighThresholdPercent: 100
EOF
put "$ETC/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $ETC/kube-proxy.kubeconfig}
hostnameOverride: $NODE
mode: iptables
clusterCIDR: $CLUSTER_CIDR
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
oomScoreAdj: 0
EOF

############################################################ 6. host network and sysctls
[ -f "$RUN/sysctl.orig" ] || sysctl -e net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables vm.overcommit_memory \
	vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes |
	sed 's/ = /=/' >"$RUN/sysctl.orig"
modprobe br_netfilter 2>/dev/null || true
sysctl -qw net.ipv4.ip_forward=1
sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || ts "warning: net.bridge.bridge-nf-call-iptables not available"
ip link show cni0 >/dev/null 2>&1 || ip link add cni0 type bridge
# replace, not add: idempotent when the bridge outlived a node that was not taken down
ip addr replace "$NODE_IP/24" dev cni0
ip link set cni0 up
# service VIPs never leave through the uplink (an unallocated VIP goes to the bridge and dies there)
ip route replace "$SVC_CIDR" dev cni0 src "$NODE_IP"
# pods may not send anything off the host
iptables -N "$GUARD_CHAIN" 2>/dev/null || true
iptables -C "$GUARD_CHAIN" -s "$CLUSTER_CIDR" ! -o cni0 -j DROP 2>/dev/null || iptables -A "$GUARD_CHAIN" -s "$CLUSTER_CIDR" ! -o cni0 -j DROP
iptables -C FORWARD -j "$GUARD_CHAIN" 2>/dev/null || iptables -I FORWARD 1 -j "$GUARD_CHAIN"

############################################################ 7. daemons
# start NAME CMD...: run CMD under a restart loop (like systemd's Restart=always: kube-controller-manager
# exits when it starts before RBAC is bootstrapped, kube-proxy when its config changes). setsid makes
# the supervisor's pid its process group id, which down.sh signals; $0 of the supervisor names this
# clone's state folder so a recycled pid is never taken for ours.
start() {
	local n=$1
	shift
	if alive "$n"; then return 0; fi
	setsid bash -c 'while :; do "$@"; echo "[supervisor] $1 exited rc=$? at $(date -Is); restarting in 1s"; sleep 1; done' \
		"$(supervisor_tag "$n")" "$@" >>"$LOGS/$n.log" 2>&1 </dev/null &
	echo $! >"$RUN/$n.pid"
	ts "started $n (process group $!, log $LOGS/$n.log)"
}

start containerd containerd --config "$ETC/containerd.toml"
start etcd "$ETCD_BIN/etcd" --name "$NODE" --data-dir "$VAR/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster "$NODE=http://127.0.0.1:2380" --listen-metrics-urls "" --log-level warn
start kube-apiserver "$K8S_BIN/kube-apiserver" \
	--advertise-address="$NODE_IP" --bind-address="$NODE_IP" --secure-port=6443 \
	--etcd-servers=http://127.0.0.1:2379 \
	--allow-privileged=true --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
	--client-ca-file="$PKI/ca.crt" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
	--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
	--service-cluster-ip-range="$SVC_CIDR" --profiling=false \
	--requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
	--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
	--requestheader-extra-headers-prefix=X-Remote-Extra- \
	--proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key"
start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
	--kubeconfig="$ETC/controller-manager.kubeconfig" --authentication-kubeconfig="$ETC/controller-manager.kubeconfig" \
	--authorization-kubeconfig="$ETC/controller-manager.kubeconfig" --bind-address=127.0.0.1 \
	--cluster-name="$CLUSTER_NAME" --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
	--root-ca-file="$PKI/ca.crt" --service-account-private-key-file="$PKI/sa.key" --use-service-account-credentials=true \
	--service-cluster-ip-range="$SVC_CIDR" --cluster-cidr="$CLUSTER_CIDR" --allocate-node-cidrs=false --profiling=false
start kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig="$ETC/scheduler.kubeconfig" \
	--authentication-kubeconfig="$ETC/scheduler.kubeconfig" --authorization-kubeconfig="$ETC/scheduler.kubeconfig" \
	--bind-address=127.0.0.1 --profiling=false
waitfor "containerd CRI socket" 60 "$CRI" "$SOCK" version

# Images are imported while the kubelet starts (node readiness does not need them); the addons
# that use them are applied only after the imports finished, so nothing is ever pulled from a
# registry. A stamp next to containerd's root records which tarball each image came from.
mkdir -p "$VAR/imported"
imports=()
for img in pause etcd $(printf 'etcd-%s ' $ETCD_EXTRA_VERSIONS) coredns local-path-provisioner busybox; do
	if [ "$(cat "$VAR/imported/$img" 2>/dev/null)" != "$IMG/$img.tar" ]; then
		(ctr -a "$SOCK" -n k8s.io images import "$IMG/$img.tar" >/dev/null &&
			echo "$IMG/$img.tar" >"$VAR/imported/$img" && ts "imported $img") &
		imports+=($!)
	fi
done
start kubelet "$K8S_BIN/kubelet" --config="$ETC/kubelet.yaml" --kubeconfig="$ETC/kubelet.kubeconfig" \
	--hostname-override="$NODE" --node-ip="$NODE_IP" --root-dir="$VAR/kubelet"
start kube-proxy "$K8S_BIN/kube-proxy" --config="$ETC/kube-proxy.yaml"
waitfor "kube-apiserver /readyz" 120 kubectl get --raw /readyz
for p in "${imports[@]}"; do wait "$p" || die "image import failed (see above)"; done

############################################################ 8. addons, node Ready, DNS, storage
COREDNS_TTL=${COREDNS_TTL:-30}
sed -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|" -e "s|@COREDNS_TTL@|$COREDNS_TTL|g" -e "s|@DNS_IP@|$DNS_IP|" \
	"$LOCAL_DIR/manifests/coredns.yaml" | kubectl apply -f - >/dev/null
mkdir -p "$VAR/local-path-provisioner"
sed -e "s|@LPP_IMAGE@|$LPP_IMAGE|" -e "s|@BUSYBOX_IMAGE@|$BUSYBOX_IMAGE|g" -e "s|@LPP_PATH@|$VAR/local-path-provisioner|" \
	"$LOCAL_DIR/manifests/local-path-storage.yaml" | kubectl apply -f - >/dev/null
ts "applied CoreDNS (TTL and cache ${COREDNS_TTL}s) and local-path-provisioner (StorageClass standard)"
waitfor "node $NODE Ready" 180 kubectl wait --for=condition=Ready "node/$NODE" --timeout=2s
waitfor "CoreDNS Available" 180 kubectl -n kube-system wait --for=condition=Available deploy/coredns --timeout=2s
# cluster DNS answers through the kube-dns Service VIP (kube-proxy's rules) from the host
waitfor "cluster DNS resolves kubernetes.default" 60 \
	busybox nslookup kubernetes.default.svc.cluster.local "$DNS_IP"
waitfor "local-path-provisioner Available" 180 \
	kubectl -n local-path-storage wait --for=condition=Available deploy/local-path-provisioner --timeout=2s
echo "$KUBERNETES_VERSION" >"$RUN/up"
ts "cluster $CLUSTER_NAME is up: export KUBECONFIG=$KUBECONFIG_FILE PATH=$K8S_BIN:\$PATH"
