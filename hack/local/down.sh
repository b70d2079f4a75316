#!/usr/bin/env bash
# Stops the local node started by hack/local/up.sh and removes everything it created:
# pods (through CRI, which runs CNI DEL and unmounts), the daemons (by the process-group
# ids up.sh recorded), leftover shims, mounts, network namespaces, iptables rules, the
# cni0 bridge and its route, sysctl changes, kubelet cgroups, files on fixed host paths,
# and the state folder. Safe to run when nothing is running. Cached binaries and images
# (outside the clone) are kept.
set -uo pipefail
SCRIPT_NAME=down
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || die "needs root"

# pgid_of NAME: the recorded process group of daemon NAME if it is still ours, else the
# group of a supervisor carrying this clone's tag for NAME (a pid file lost mid-run).
pgid_of() {
	if alive "$1"; then
		cat "$RUN/$1.pid"
		return
	fi
	# a supervisor leads its process group (pid == pgid); the awk below does not
	ps -eo pid=,pgid=,args= | awk -v tag="$(supervisor_tag "$1")" '$1 == $2 && index($0, tag) {print $1; exit}'
}

# stop NAME [TIMEOUT]: SIGTERM the daemon's process group, SIGKILL it after TIMEOUT seconds.
stop() {
	local n=$1 t=${2:-20} pg deadline
	pg=$(pgid_of "$n")
	rm -f "$RUN/$n.pid"
	[ -n "$pg" ] || return 0
	kill -TERM -- "-$pg" 2>/dev/null
	deadline=$((SECONDS + t))
	while kill -0 -- "-$pg" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do sleep 0.1; done
	if kill -0 -- "-$pg" 2>/dev/null; then
		ts "$n did not stop in ${t}s: SIGKILL to process group $pg"
		kill -KILL -- "-$pg" 2>/dev/null
		while kill -0 -- "-$pg" 2>/dev/null; do sleep 0.1; done
	fi
	ts "stopped $n (process group $pg)"
}

# the node agents and controllers first (in parallel), so nothing recreates what is removed next
for d in kube-proxy kubelet kube-scheduler kube-controller-manager; do stop "$d" & done
wait
# remove every pod sandbox while containerd still runs: CNI DEL, unmounts, container kills
if alive containerd && [ -x "$(cri_tool)" ]; then
	"$(cri_tool)" "$SOCK" rmall >/dev/null || ts "warning: some pod sandboxes could not be removed through CRI"
fi
stop kube-apiserver &
stop containerd 30 &
wait
stop etcd

# containerd shims of this cluster outlive containerd (they are re-parented): kill them and their containers
for pid in $(ps -eo pid=,args= | awk -v s="$SOCK" 'index($0, "containerd-shim") && index($0, "-address " s) {print $1}'); do
	ts "killing leftover shim $pid and its children"
	for c in $(ps -eo pid=,ppid= | awk -v p="$pid" '$2 == p {print $1}'); do kill -KILL "$c" 2>/dev/null; done
	kill -KILL "$pid" 2>/dev/null
done

# Files outside the state folder that belong to pod sandboxes CRI could not remove (a cluster
# whose processes died): libcni's cached results and the shims' sockets, which containerd names
# /run/containerd/s/sha256("<containerd address>/<namespace>/<id>").
sandbox_ids() {
	ls "$VAR/containerd/io.containerd.grpc.v1.cri/sandboxes" 2>/dev/null
	for f in /var/lib/cni/results/"$CLUSTER_NAME"-*; do
		[ -e "$f" ] && basename "$f" | sed -E "s/^$CLUSTER_NAME-([0-9a-f]{64})-.*/\1/"
	done
}
for id in $(sandbox_ids | sort -u); do
	rm -f /var/lib/cni/results/*-"$id"-* "/run/containerd/s/$(printf '%s' "$SOCK/k8s.io/$id" | sha256sum | cut -d' ' -f1)"
done

# iptables: kube-proxy's and kubelet's KUBE-* chains, CNI portmap CNI-* chains, our guard chain
PREFIX="^(KUBE-|CNI-|$GUARD_CHAIN)"
[ -x "$K8S_BIN/kube-proxy" ] && "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1
for ipt in iptables ip6tables; do
	command -v $ipt >/dev/null || continue
	for t in raw mangle nat filter; do
		chains=$($ipt -t $t -S 2>/dev/null | awk -v re="$PREFIX" '$1 == "-N" && $2 ~ re {print $2}')
		# rules of built-in chains that jump into ours
		$ipt -t $t -S 2>/dev/null | awk -v re="$PREFIX" '$1 == "-A" && $2 !~ re && $0 ~ (" -j " substr(re, 2))' |
			sed 's/^-A/-D/' | while read -r rule; do eval "$ipt -t $t $rule"; done
		for c in $chains; do $ipt -t $t -F "$c" 2>/dev/null; done
		for c in $chains; do $ipt -t $t -X "$c" 2>/dev/null; done
	done
done

# mounts under the state folder (overlay rootfs, shm, volumes), deepest first
findmnt -rn -o TARGET | grep -F "$STATE/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
# network namespaces libcni created for our pods and no process uses any more
for ns in /run/netns/cni-*; do
	[ -e "$ns" ] || continue
	[ -n "$(ip netns pids "$(basename "$ns")" 2>/dev/null)" ] && continue
	umount "$ns" 2>/dev/null
	rm -f "$ns"
done
ip route del "$SVC_CIDR" dev cni0 2>/dev/null
ip link del cni0 2>/dev/null
if [ -f "$RUN/sysctl.orig" ]; then
	while IFS== read -r k v; do sysctl -qw "$k=$v" 2>/dev/null; done <"$RUN/sysctl.orig"
fi
# kubelet's cgroups (cgroup v1 and v2 layouts); only empty ones can go, deepest first
for sub in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/unified/kubepods; do
	[ -d "$sub" ] && find "$sub" -depth -type d -exec rmdir {} \; 2>/dev/null
done
# fixed host paths used by kubelet, containerd and libcni: our files, then folders left empty
find /var/log/containers -maxdepth 1 -type l -lname "$STATE/*" -delete 2>/dev/null
rm -f /var/lib/kubelet/device-plugins/kubelet.sock /var/lib/kubelet/device-plugins/DEPRECATION
rm -f /var/lib/cni/results/"$CLUSTER_NAME"-*
for d in /var/lib/kubelet /var/lib/cni /run/containerd /run/netns /var/log/containers /var/log/pods; do
	[ -d "$d" ] && find "$d" -depth -type d -empty -delete 2>/dev/null
done

if [ -d "$STATE" ]; then
	if grep -qF "$STATE/" <<<"$(findmnt -rn -o TARGET)"; then
		ts "warning: mounts under $STATE remain; keeping the folder"
	else
		# keep the logs of the last run for troubleshooting, outside the state folder
		if [ -d "$LOGS" ]; then
			rm -rf "$STATE.logs.prev"
			mv "$LOGS" "$STATE.logs.prev"
		fi
		rm -rf "$STATE"
	fi
fi
ts "down: done"
