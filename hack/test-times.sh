#!/usr/bin/env bash
# test-times.sh LOG: the wall time of every top-level test in a `go test -v` log, slowest
# first, with its result, then the sum. Tests run side by side (t.Parallel), so the sum is
# more than the suite's wall time: it says where waiting goes, the suite's own "ok" line
# says how long it took.
set -euo pipefail
log=${1:?usage: hack/test-times.sh LOG}
awk '
	/^--- (PASS|FAIL|SKIP): / {
		result = $2; sub(":", "", result)
		name = $3
		secs = $4; gsub(/[()s]/, "", secs)
		printf "%10.1f  %-4s  %s\n", secs, result, name
	}
' "$log" | sort -rn >"$log.times"
echo "== test times (slowest first; seconds, result, test)"
cat "$log.times"
awk '{ n++; sum += $1 } END { printf "%10.1f  %d tests (sum; they run side by side)\n", sum, n }' "$log.times"
rm -f "$log.times"
