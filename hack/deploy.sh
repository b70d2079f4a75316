#!/usr/bin/env bash
# Deploys the operator and the example the way a user does, once those files exist:
# kubectl apply deploy/ (its kustomization when it has one, else every file, recursively,
# in name order), waits for the CRDs Established and the operator Deployments rolled out,
# then applies example/etcdcluster.yaml. DEPLOY_DIR and EXAMPLE override the two paths.
set -euo pipefail
SCRIPT_NAME=deploy
. "$(dirname "$0")/local/lib.sh"

OPERATOR_NS=etcd-operator-system
export KUBECONFIG=$KUBECONFIG_FILE
[ -f "$KUBECONFIG" ] || die "no cluster is up: run make up"
cd "$ROOT"
DEPLOY_DIR=${DEPLOY_DIR:-deploy}
EXAMPLE=${EXAMPLE:-example/etcdcluster.yaml}
if [ ! -d "$DEPLOY_DIR" ] || [ -z "$(find "$DEPLOY_DIR" -name '*.yaml' -o -name '*.yml' | head -1)" ]; then
	ts "$DEPLOY_DIR/ has no manifests yet: nothing to deploy"
	exit 0
fi
# the Deployment runs the image make image builds; without the operator's main package there is none
if [ ! -d "${OPERATOR_SRC:-$ROOT}/${OPERATOR_PKG:-./cmd/etcd-operator}" ]; then
	ts "${OPERATOR_PKG:-./cmd/etcd-operator} does not exist yet (no operator image): $DEPLOY_DIR/ not applied"
	exit 0
fi
if [ -f "$DEPLOY_DIR/kustomization.yaml" ]; then
	kubectl apply -k "$DEPLOY_DIR/"
else
	kubectl apply -R -f "$DEPLOY_DIR/"
fi
if [ -n "$(kubectl get crd -o name)" ]; then
	waitfor "CRDs Established" 60 kubectl wait --for=condition=Established crd --all --timeout=2s
fi
deploys=$(kubectl -n "$OPERATOR_NS" get deploy -o name 2>/dev/null || true)
[ -n "$deploys" ] || ts "no Deployment in $OPERATOR_NS after applying $DEPLOY_DIR/"
for d in $deploys; do
	# rollout status waits for the current template's pods (Available alone is already
	# true while a restarted Deployment still runs its old pods)
	if ! kubectl -n "$OPERATOR_NS" rollout status "$d" --timeout=180s; then
		kubectl -n "$OPERATOR_NS" get pods -o wide
		for p in $(kubectl -n "$OPERATOR_NS" get pods -o name); do
			kubectl -n "$OPERATOR_NS" logs "$p" --all-containers --tail=50 || true
		done
		die "$d did not become available"
	fi
done
[ -z "$deploys" ] || ts "operator Deployments in $OPERATOR_NS available"
if [ -f "$EXAMPLE" ]; then
	# On a fresh node the operator makes its CRDs as it starts: the API server may refuse the
	# kind for a moment after they are Established, until its discovery serves it.
	waitfor "the operator's CRDs Established" 60 kubectl wait --for=condition=Established crd --all --timeout=2s
	waitfor "$EXAMPLE applied" 60 kubectl apply -f "$EXAMPLE" || kubectl apply -f "$EXAMPLE"
else
	ts "$EXAMPLE does not exist yet: no example applied"
fi
