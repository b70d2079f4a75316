#!/usr/bin/env bash
# make helm: builds helm, the version hack/tools/helm/go.mod pins, from Go modules into the
# tool cache (built once per version and recipe: seconds when cached) and links it as bin/helm.
#   hack/helm.sh          build (if needed) and link bin/helm
#   hack/helm.sh check    make verify's chart check: helm lint --strict and helm template of
#                         charts/etcd-operator, cluster-wide and namespaced, offline
set -euo pipefail
SCRIPT_NAME=helm
. "$(dirname "$0")/local/lib.sh"

MOD=$ROOT/hack/tools/helm
CHART=$ROOT/charts/etcd-operator
HELM_VERSION=$(sed -n 's/^[[:space:]]*helm.sh\/helm\/v3 \(v[^ ]*\).*/\1/p' "$MOD/go.mod" | head -1)
[ -n "$HELM_VERSION" ] || die "hack/tools/helm/go.mod requires no helm.sh/helm/v3"
# the Kubernetes libraries helm is built with: helm template's default cluster version
K8S_MINOR=$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$MOD/go.mod" | head -1)
ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
	ld+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$K8S_MINOR"
done
tool_from_module helm "$HELM_VERSION" "$MOD" helm.sh/helm/v3/cmd/helm "$ld"
HELM=$TOOL

if [ "${1:-}" = check ]; then
	# deploy/'s tests build deploy/ with the kustomize library of the tool module: it must be
	# the one the pinned kubectl embeds (k8s.io/cli-runtime of KUBERNETES_VERSION requires it)
	cli_runtime=k8s.io/cli-runtime@v0.${KUBERNETES_VERSION#v1.}
	want=$(cd "$MOD" && sed -n 's/^[[:space:]]*sigs.k8s.io\/kustomize\/api \(v[^ ]*\).*/\1/p' \
		"$(go mod download -json "$cli_runtime" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')")
	got=$(sed -n 's/^[[:space:]]*sigs.k8s.io\/kustomize\/api \(v[^ ]*\).*/\1/p' "$MOD/go.mod")
	[ -n "$want" ] && [ "$want" = "$got" ] ||
		die "hack/tools/helm/go.mod requires sigs.k8s.io/kustomize/api ${got:-none}; kubectl $KUBERNETES_VERSION embeds ${want:-?} ($cli_runtime)"
	# helm keeps no state of its own for lint and template; a throwaway home keeps the user's out
	HELM_HOME_DIR=$(mktemp -d)
	trap 'rm -rf "$HELM_HOME_DIR"' EXIT
	export HELM_CONFIG_HOME=$HELM_HOME_DIR/config HELM_CACHE_HOME=$HELM_HOME_DIR/cache HELM_DATA_HOME=$HELM_HOME_DIR/data
	for values in "" "--set namespaced=true" "--set monitoring.enabled=true --set monitoring.requireAPI=false"; do
		# shellcheck disable=SC2086 # values is a list of flags
		"$HELM" lint --strict "$CHART" $values >/dev/null || { "$HELM" lint --strict "$CHART" $values; die "helm lint $values"; }
		# shellcheck disable=SC2086
		"$HELM" template etcd-operator "$CHART" --namespace etcd-operator-system $values >/dev/null ||
			die "helm template $values"
	done
	ts "helm lint and helm template of charts/etcd-operator: ok"
fi
