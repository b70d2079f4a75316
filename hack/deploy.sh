#!/usr/bin/env bash
# Deploys the operator and the example the way a user does, once those files exist:
# kubectl apply deploy/ (its kustomization when it has one, else every file, recursively,
# in name order), waits for the CRDs Established and the operator Deployments Available,
# then applies example/etcdcluster.yaml.
set -euo pipefail
SCRIPT_NAME=deploy
. "$(dirname "$0")/local/lib.sh"

OPERATOR_NS=etcd-operator-system
export KUBECONFIG=$KUBECONFIG_FILE
[ -f "$KUBECONFIG" ] || die "no cluster is up: run make up"
cd "$ROOT"
if [ ! -d deploy ] || [ -z "$(find deploy -name '*.yaml' -o -name '*.yml' | head -1)" ]; then
	ts "deploy/ has no manifests yet: nothing to deploy"
	exit 0
fi
if [ -f deploy/kustomization.yaml ]; then
	kubectl apply -k deploy/
else
	kubectl apply -R -f deploy/
fi
if kubectl get crd -o name | grep -q .; then
	waitfor "CRDs Established" 60 kubectl wait --for=condition=Established crd --all --timeout=2s
fi
if kubectl -n "$OPERATOR_NS" get deploy -o name 2>/dev/null | grep -q .; then
	waitfor "operator Deployments in $OPERATOR_NS Available" 180 \
		kubectl -n "$OPERATOR_NS" wait --for=condition=Available deploy --all --timeout=2s ||
		{ kubectl -n "$OPERATOR_NS" get pods -o wide; kubectl -n "$OPERATOR_NS" logs deploy/etcd-operator --tail=50 2>&1 || true; exit 1; }
else
	ts "no Deployment in $OPERATOR_NS after applying deploy/"
fi
if [ -f example/etcdcluster.yaml ]; then
	kubectl apply -f example/etcdcluster.yaml
else
	ts "example/etcdcluster.yaml does not exist yet: no example applied"
fi
