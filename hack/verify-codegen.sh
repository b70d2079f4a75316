#!/usr/bin/env bash
# Fails when the generated files differ from what hack/update-codegen.sh produces from the
# current API types. It regenerates into a temporary copy of the working tree, so it never
# touches the files under review, then compares the generated paths.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

# Paths hack/update-codegen.sh owns.
GENERATED=(
	pkg/apis/etcd/v1alpha1/zz_generated.deepcopy.go
	pkg/generated
	deploy/crd
	docs/api.md
)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/verify-codegen.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Tracked and untracked, not ignored, files that still exist: the tree as the author sees it.
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf - | tar -xf - -C "$TMP"

if ! "$TMP/hack/update-codegen.sh" >"$TMP/.update-codegen.log" 2>&1; then
	cat "$TMP/.update-codegen.log" >&2
	echo "verify-codegen: hack/update-codegen.sh failed" >&2
	exit 1
fi

drift=0
for p in "${GENERATED[@]}"; do
	if ! diff -ruN "$ROOT/$p" "$TMP/$p" >"$TMP/drift.diff"; then
		sed -e "s#$TMP/##g" -e "s#$ROOT/##g" "$TMP/drift.diff" >&2
		drift=1
	fi
done
if [ "$drift" -ne 0 ]; then
	echo >&2
	echo "verify-codegen: generated code or docs/api.md is out of date with the API types (diff above)." >&2
	echo "verify-codegen: run hack/update-codegen.sh and commit the result." >&2
	exit 1
fi
echo "verify-codegen: generated code and docs/api.md are up to date"
