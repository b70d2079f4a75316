#!/usr/bin/env bash
# phases.sh TARGET...: runs `make TARGET` for each target in order, stopping at the first that
# fails, and ends with the time each took (make test's phases: unit, verify, up, e2e), also
# when one failed, so that a slow or failing phase is named in CI's log. PHASE_FILE, when set,
# holds the phase under way (then "done"): .ci/run starts the kind part when it reads e2e.
set -uo pipefail
times=()
rc=0
for target in "$@"; do
	t=$SECONDS
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
