#!/usr/bin/env bash
# phases.sh TARGET...: runs `make TARGET` for each target in order, stopping at the first that
# fails, and ends with the time each took (make test's phases: unit, verify, up, e2e), also
# when one failed, so that a slow or failing phase is named in CI's log. PHASE_FILE, when set,
# holds the phase under way (then "done"): .ci/run starts the kind part when it reads e2e.
# WARM, when set, is a command started with the first phase at the lowest priority (nice 19,
# hack/lowprio.sh), in its own session and process group, and ended when the phase WARM_UNTIL starts, or with this script:
# make test's hack/warm-builds.sh, which compiles ahead what its e2e phase builds.
set -uo pipefail
times=()
rc=0
warm_pid=
end_warm() {
	[ -z "$warm_pid" ] || kill -- "-$warm_pid" 2>/dev/null || true
	warm_pid=
}
trap end_warm EXIT
if [ -n "${WARM:-}" ]; then
	# shellcheck disable=SC2086 # WARM is a command line
	setsid "$(dirname "$0")/lowprio.sh" 19 $WARM </dev/null >"${WARM_LOG:-/dev/null}" 2>&1 &
	warm_pid=$!
fi
for target in "$@"; do
	t=$SECONDS
	[ "$target" != "${WARM_UNTIL:-}" ] || end_warm
	[ -z "${PHASE_FILE:-}" ] || echo "$target" >"$PHASE_FILE"
	${MAKE:-make} "$target"
	rc=$?
	times+=("$(printf '%8ss  %-7s %s' "$((SECONDS - t))" "$target" "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED ($rc)")")")
	[ "$rc" -eq 0 ] || break
done
[ -z "${PHASE_FILE:-}" ] || echo done >"$PHASE_FILE"
echo "== phases (seconds, target, result)"
printf '%s\n' "${times[@]}"
exit "$rc"
