#!/usr/bin/env bash
# alerts-test.sh: checks deploy/monitoring/alerts.rules.yaml and runs its unit tests
# (alerts.test.yaml) with promtool, from Debian's prometheus package, installed when missing
# (as root; make up installs it too). The package's Prometheus service is stopped and disabled:
# only promtool is wanted here.
set -euo pipefail
SCRIPT_NAME=alerts-test
. "$(dirname "$0")/local/lib.sh"
cd "$ROOT/deploy/monitoring"
if ! command -v promtool >/dev/null; then
	[ "$(id -u)" = 0 ] || { echo "alerts-test: promtool is missing: apt-get install prometheus (as root)" >&2; exit 1; }
	echo "alerts-test: installing Debian's prometheus package for promtool"
	apt_install prometheus
	if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
		systemctl disable --now prometheus >/dev/null 2>&1 || true
	fi
fi
promtool check rules alerts.rules.yaml
promtool test rules alerts.test.yaml
