#!/usr/bin/env bash
# lowprio.sh NICE COMMAND...: runs COMMAND at priority NICE, in the session setsid made for it.
# Where the kernel groups tasks by session (autogroup: /proc/sys/kernel/sched_autogroup_enabled
# is 1, as on this project's machines), a new session is a scheduling group of its own, whose
# share of the CPU is set by the group's nice, not by its tasks': a task at nice 19 in a new
# session still took half of the two cores from make test (2026-11-29). So the group's nice is
# set too (/proc/self/autogroup), from inside the new session: written from outside before
# setsid, it would lower the caller's own group.
set -euo pipefail
n=$1
shift
[ ! -w /proc/self/autogroup ] || echo "$n" >/proc/self/autogroup 2>/dev/null || true
exec nice -n "$n" "$@"
