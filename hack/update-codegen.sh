#!/usr/bin/env bash
# Regenerates everything derived from the API types in pkg/apis:
#   pkg/apis/etcd/v1alpha1/zz_generated.deepcopy.go   deepcopy-gen
#   pkg/generated/{clientset/versioned,listers,informers/externalversions}
#       with kube_codegen.sh of the k8s.io/code-generator version pinned in go.mod
#       (hack/tools.go keeps it there)
#   deploy/crd/etcd.operator.dev_*.yaml, the CRDs (not the admission policy beside them)
#       with controller-gen pinned in its own module, hack/tools/controller-gen, so that
#       controller-tools stays out of the operator's go.mod; deploy/embed.go embeds these files,
#       so the operator applies the same CRDs as deploy/
#   docs/api.md
#       the API reference, with crd-ref-docs at CRD_REF_DOCS_VERSION below, run by
#       `go run module@version`: the version pins it (its own go.mod and go.sum, checked against
#       the checksum database), and none of its dependencies enter the operator's go.mod.
#       Configuration and markdown templates in hack/crd-ref-docs/.
# Works from any clone location: paths come from this script's location and package paths
# from go.mod. The generators are built into
# ${ETCD_OPERATOR_CACHE:-~/.cache/etcd-operator}/tools/<tool>-<version>/ (crd-ref-docs: Go's build cache).
set -euo pipefail

CRD_REF_DOCS_VERSION=v0.3.0

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

MODULE=$(go list -m)
CODEGEN_VERSION=$(go list -m -f '{{.Version}}' k8s.io/code-generator)
go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
if [ -z "$CODEGEN_PKG" ] || [ ! -f "$CODEGEN_PKG/kube_codegen.sh" ]; then
	echo "update-codegen: kube_codegen.sh of k8s.io/code-generator $CODEGEN_VERSION not found (go list -m gave '$CODEGEN_PKG')" >&2
	exit 1
fi

CACHE=${ETCD_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator}
export GOBIN="$CACHE/tools/code-generator-$CODEGEN_VERSION/bin"
mkdir -p "$GOBIN"

# shellcheck source=/dev/null
source "$CODEGEN_PKG/kube_codegen.sh"

BOILERPLATE="$ROOT/hack/boilerplate.go.txt"
# kube_codegen.sh greps the output folders for stale files before generating.
mkdir -p "$ROOT"/pkg/generated/{clientset,listers,informers}

kube::codegen::gen_helpers \
	--boilerplate "$BOILERPLATE" \
	"$ROOT/pkg/apis"

kube::codegen::gen_client \
	--with-watch \
	--output-dir "$ROOT/pkg/generated" \
	--output-pkg "$MODULE/pkg/generated" \
	--boilerplate "$BOILERPLATE" \
	"$ROOT/pkg/apis"

CONTROLLER_TOOLS_VERSION=$(cd "$ROOT/hack/tools/controller-gen" && go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools)
CONTROLLER_GEN="$CACHE/tools/controller-gen-$CONTROLLER_TOOLS_VERSION/controller-gen"
(cd "$ROOT/hack/tools/controller-gen" && go build -o "$CONTROLLER_GEN" sigs.k8s.io/controller-tools/cmd/controller-gen)
echo "Generating CRDs with controller-gen $CONTROLLER_TOOLS_VERSION"
mkdir -p "$ROOT/deploy/crd"
# Only the CRDs are generated: the admission policy beside them is written by hand and kept.
for f in "$ROOT"/deploy/crd/*.yaml; do
	if grep -qsx 'kind: CustomResourceDefinition' "$f"; then rm -f "$f"; fi
done
"$CONTROLLER_GEN" \
	crd:crdVersions=v1 \
	paths="./pkg/apis/..." \
	output:crd:dir="$ROOT/deploy/crd"

echo "Generating docs/api.md with crd-ref-docs $CRD_REF_DOCS_VERSION"
go run "github.com/elastic/crd-ref-docs@$CRD_REF_DOCS_VERSION" \
	--log-level=ERROR \
	--source-path="$ROOT/pkg/apis" \
	--config="$ROOT/hack/crd-ref-docs/config.yaml" \
	--templates-dir="$ROOT/hack/crd-ref-docs/templates" \
	--renderer=markdown \
	--output-path="$ROOT/docs/api.md"
