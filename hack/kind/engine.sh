#!/usr/bin/env bash
# The Docker engine of the kind path (see lib.sh for which engine is used).
#   engine.sh up    use the host's engine if one answers; otherwise install Debian's docker.io
#                   when missing and start the project's own dockerd (private socket, data in
#                   the cache, no default bridge, ip_forward and the FORWARD policy left alone),
#                   recording what it changes on the host
#   engine.sh down  stop the project's own dockerd by its pid and undo its iptables chains and
#                   sysctl changes; the host's engine is never stopped or changed
# Idempotent; `down` is safe when nothing runs.
set -euo pipefail
SCRIPT_NAME=engine
. "$(dirname "$0")/lib.sh"

BEFORE=$ENGINE_RUN/host.before
SYSCTLS="net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables"

# docker_chains [iptables|ip6tables]: the DOCKER* chains of the filter and nat tables, as "table chain".
docker_chains() {
	local t
	for t in filter nat; do
		"$1" -t $t -S 2>/dev/null | awk -v t=$t '$1 == "-N" && $2 ~ /^DOCKER/ {print t, $2}'
	done
}

# install_docker: Debian's docker.io (dockerd) without starting its service: where no
# policy-rc.d exists, a temporary one forbids the package's start during the install.
install_docker() {
	command -v dockerd >/dev/null && command -v jq >/dev/null && command -v iptables >/dev/null && return 0
	[ "$(id -u)" = 0 ] || die "the kind path needs a Docker engine: none answers and installing docker.io needs root"
	ts "installing Debian's docker.io (no engine answers)"
	local guard=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		guard=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$guard"
		chmod +x "$guard"
	fi
	apt_install docker.io jq iptables ||
		{ [ -z "$guard" ] || rm -f "$guard"; die "apt-get install docker.io failed"; }
	[ -z "$guard" ] || rm -f "$guard"
}

# has_cap_sys_resource: CAP_SYS_RESOURCE (bit 24) is in this host's capability bounding set.
has_cap_sys_resource() {
	local bnd
	bnd=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
	(((0x$bnd >> 24) & 1))
}

up() {
	mkdir -p "$STATE"
	if [ -f "$ENGINE_STATE" ] && [ "$(engine_kind)" = host ]; then
		use_engine
		docker info >/dev/null 2>&1 || die "the Docker engine recorded in $ENGINE_STATE (DOCKER_HOST=${DOCKER_HOST:-default}) does not answer"
		return 0
	fi
	if ! own_engine_alive && [ ! -f "$ENGINE_STATE" ] && command -v docker >/dev/null && docker info >/dev/null 2>&1; then
		printf 'engine=host\ndocker_host=%s\n' "${DOCKER_HOST:-}" >"$ENGINE_STATE"
		ts "using the Docker engine at ${DOCKER_HOST:-the default socket} as it is"
		return 0
	fi
	printf 'engine=own\ndocker_host=unix://%s\n' "$ENGINE_SOCK" >"$ENGINE_STATE"
	export DOCKER_HOST=unix://$ENGINE_SOCK
	if own_engine_alive; then
		docker info >/dev/null 2>&1 && return 0
		waitfor "dockerd (pid $(cat "$ENGINE_PID")) answering" 60 docker info
		return 0
	fi
	install_docker
	[ "$(id -u)" = 0 ] || die "starting the project's own dockerd needs root"
	mkdir -p "$ENGINE_RUN" "$ENGINE_DATA"
	# what the engine may change on the host, recorded before its first start
	if [ ! -f "$BEFORE" ]; then
		{
			sysctl -e $SYSCTLS 2>/dev/null | sed 's/ = /=/; s/^/sysctl /'
			for ipt in iptables ip6tables; do
				command -v $ipt >/dev/null || continue
				docker_chains $ipt | sed "s/^/chain $ipt /"
				echo "policy $ipt $($ipt -S FORWARD 2>/dev/null | awk '$1 == "-P" {print $3}')"
			done
		} >"$BEFORE.part"
		mv "$BEFORE.part" "$BEFORE"
	fi
	local args=(--host "unix://$ENGINE_SOCK" --exec-root "$ENGINE_RUN/exec" --data-root "$ENGINE_DATA"
		--pidfile "$ENGINE_PID" --bridge=none --ip-forward=false --ip-masq=false)
	if ! has_cap_sys_resource; then
		# a copy outside the clone: the engine may outlive the clone's files
		install -m 0755 "$KIND_DIR/runc-nocap" "$ENGINE_RUN/runc-nocap"
		args+=(--add-runtime "nocap=$ENGINE_RUN/runc-nocap" --default-runtime nocap)
		ts "CAP_SYS_RESOURCE is missing from the capability bounding set: privileged containers run through runc-nocap"
	fi
	ts "starting dockerd (socket $ENGINE_SOCK, data $ENGINE_DATA, log $ENGINE_RUN/dockerd.log)"
	setsid dockerd "${args[@]}" >>"$ENGINE_RUN/dockerd.log" 2>&1 </dev/null &
	local pid=$!
	local deadline=$((SECONDS + 60))
	until docker info >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || { tail -n 20 "$ENGINE_RUN/dockerd.log" >&2; die "dockerd exited at start (log $ENGINE_RUN/dockerd.log)"; }
		[ $SECONDS -lt "$deadline" ] || { tail -n 20 "$ENGINE_RUN/dockerd.log" >&2; die "dockerd did not answer within 60s"; }
		sleep 0.2
	done
	# dockerd writes the pid file itself; keep ours authoritative for `down`
	echo "$pid" >"$ENGINE_PID"
	# the sysctls as the engine left them at its start: `down` restores only what it changed
	[ -f "$ENGINE_RUN/host.after" ] || sysctl -e $SYSCTLS 2>/dev/null | sed 's/ = /=/; s/^/sysctl /' >"$ENGINE_RUN/host.after"
	ts "dockerd is up (pid $pid)"
}

# restore_iptables: remove the rules and chains the engine left in the filter and nat
# tables (dockerd never removes its chains on exit), unless they were there before it started.
restore_iptables() {
	local ipt t rule c
	for ipt in iptables ip6tables; do
		command -v $ipt >/dev/null || continue
		if grep -q "^chain $ipt " "$BEFORE" 2>/dev/null; then
			ts "$ipt: DOCKER chains were there before the engine started: left as they are"
			continue
		fi
		for t in filter nat; do
			# rules of other chains that jump into DOCKER* chains
			$ipt -t $t -S 2>/dev/null | awk '$1 == "-A" && $2 !~ /^DOCKER/ && / -j DOCKER/' | sed 's/^-A/-D/' |
				while read -r rule; do eval "$ipt -t $t $rule"; done
			# masquerading of a Docker network whose bridge is gone (dockerd stopped before
			# the network was removed)
			if [ $t = nat ]; then
				$ipt -t nat -S POSTROUTING | awk '/ -o br-[0-9a-f]+ -j MASQUERADE/' | while read -r rule; do
					ip link show "$(grep -oE 'br-[0-9a-f]{12}' <<<"$rule")" >/dev/null 2>&1 || eval "$ipt -t nat ${rule/-A/-D}"
				done
			fi
			for c in $($ipt -t $t -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^DOCKER/ {print $2}'); do
				$ipt -t $t -F "$c"
			done
			for c in $($ipt -t $t -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^DOCKER/ {print $2}'); do
				$ipt -t $t -X "$c"
			done
		done
		# the FORWARD policy, should anything have changed it while the engine ran
		local was
		was=$(awk -v i=$ipt '$1 == "policy" && $2 == i {print $3}' "$BEFORE" 2>/dev/null)
		if [ -n "$was" ] && [ "$($ipt -S FORWARD | awk '$1 == "-P" {print $3}')" != "$was" ]; then
			ts "$ipt: FORWARD policy back to $was"
			$ipt -P FORWARD "$was"
		fi
	done
}

# restore_sysctls: put back the sysctls the engine changed at its start (they differ between
# host.before and host.after) and that still hold the engine's value: a later change by
# someone else (the local node sets ip_forward, say) is theirs to undo.
restore_sysctls() {
	local k v now set
	[ -f "$ENGINE_RUN/host.after" ] || return 0
	while read -r _ kv; do
		k=${kv%%=*} v=${kv#*=}
		set=$(sed -n "s/^sysctl $k=//p" "$ENGINE_RUN/host.after")
		now=$(sysctl -n "$k" 2>/dev/null) || continue
		if [ "$set" != "$v" ] && [ "$now" = "$set" ]; then
			sysctl -qw "$k=$v"
			ts "$k back to $v"
		fi
	done < <(grep '^sysctl ' "$BEFORE" 2>/dev/null)
}

down() {
	local pid
	if own_engine_alive; then
		pid=$(cat "$ENGINE_PID")
		ts "stopping dockerd (pid $pid)"
		kill -TERM "$pid"
		local deadline=$((SECONDS + 60))
		while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do sleep 0.2; done
		if kill -0 "$pid" 2>/dev/null; then
			ts "dockerd did not stop in 60s: SIGKILL"
			kill -KILL "$pid"
			while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
		fi
		ts "stopped dockerd (pid $pid)"
	fi
	[ -d "$ENGINE_RUN" ] || return 0
	# its containerd and shims were started under the exec root: nothing of them may remain
	local left
	left=$(ps -eo pid=,args= | awk -v r="$ENGINE_RUN/" 'index($0, r) && !/awk/ {print $1}')
	if [ -n "$left" ]; then
		ts "killing leftover processes of the engine: $(echo $left)"
		kill -KILL $left 2>/dev/null || true
	fi
	local m
	for m in $(findmnt -rn -o TARGET | awk -v a="$ENGINE_RUN/" -v b="$ENGINE_DATA/" 'index($0, a) == 1 || index($0, b) == 1' | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	restore_iptables
	restore_sysctls
	if [ -f "$ENGINE_RUN/dockerd.log" ]; then cp "$ENGINE_RUN/dockerd.log" "$CACHE/dockerd.log.prev"; fi
	rm -rf "$ENGINE_RUN"
	ts "engine: host restored (dockerd log kept in $CACHE/dockerd.log.prev; images cached in $ENGINE_DATA)"
}

case ${1:-} in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
