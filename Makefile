# etcd-operator: build, run and test against a real Kubernetes.
#   make up     cluster (local node without Docker, or kind with Docker), operator image, deploy/, example
#   make test   unit tests + codegen verification, then make up and the e2e suite
# See README.md. Cluster state: .local/ (git-ignored); build cache: ${ETCD_OPERATOR_CACHE:-~/.cache/etcd-operator}.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

IMAGE ?= etcd-operator:dev
export IMAGE
# kubectl built for the pinned Kubernetes version (hack/local/versions.env)
KUBECTL_DIR := $(shell . hack/local/lib.sh && echo $$K8S_BIN)
# E2E_RUN: a go test -run regexp (make e2e E2E_RUN='TestClusterLifecycle|TestDefaultStorageClassPVC');
# E2E_FLAGS: more go test flags, passed to the shell as written
E2E_RUN ?=
E2E_FLAGS ?=
# E2E_PARALLEL: how many e2e tests run side by side (docs/testing.md says why 4)
E2E_PARALLEL ?= 4
# UNIT_PARALLEL: how many test binaries make unit runs at once: more than the two cores, as its
# slowest packages wait on embedded etcd's disk and on timers (docs/testing.md)
UNIT_PARALLEL ?= 4
# E2E_LOG: where make e2e writes go test's output (two suites on two clusters at once: one each)
E2E_LOG ?= _output/e2e.log
# unit-tested trees that exist (go test fails on a pattern whose folder is missing)
UNIT_PKGS := $(foreach d,pkg cmd deploy hack/tools test/e2e/framework,$(if $(wildcard $(d)),./$(d)/...))
# BENCH_ROUNDS: how many clusters make bench creates for the apply -> Available median
BENCH_ROUNDS ?= 3
# BENCH_ONLY: the parts of make bench to run, comma-separated (floor, operator, tls-renewal, memory,
# backup, scale); empty runs all. BENCH_SCALE_IDLE: the scale part's idle window (default 5m);
# BENCH_SCALE_N: its number of clusters (default: what the node has room for). docs/scale.md.
BENCH_ONLY ?=
BENCH_SCALE_IDLE ?=
BENCH_SCALE_N ?=
# E2E_DEPLOY_DIR: what make test's make up installs: deploy/ with shorter time bounds for the
# suite (docs/testing.md); E2E_DEPLOY_DIR=deploy runs the suite on the production bounds
E2E_DEPLOY_DIR ?= test/e2e/deploy

.PHONY: help up cluster image deploy down kubeconfig test unit verify alerts-test e2e e2e-rollout bench s3 plugin helm prometheus

help:
	@echo "make up          start the cluster, build and load the operator image, deploy it and the example"
	@echo "make test        make unit verify, then make up and make e2e"
	@echo "make down        stop the cluster and remove everything it created"
	@echo "make image       build the operator image $(IMAGE) and load it into the cluster"
	@echo "make e2e         run the e2e suite against the running cluster"
	@echo "make unit        go vet and go test -race ./pkg/... ./cmd/..."
	@echo "make verify      hack/verify-codegen.sh (when present), make alerts-test, helm lint and helm template of the chart,"
	@echo "                 the node's helper modules at the project's dependency versions (hack/local/align-modules.sh)"
	@echo "make alerts-test promtool check and test of deploy/monitoring/alerts.rules.yaml"
	@echo "make e2e-rollout only the version-change and pod-rollout e2e tests (make e2e runs them too)"
	@echo "make bench       measure speed and memory (StatefulSet floor vs the operator) on the running cluster; writes docs/bench.md"
	@echo "                 and docs/bench-scale.md; BENCH_ONLY=scale runs the scale part alone (many clusters at once,"
	@echo "                 the operator's CPU, memory and API requests; BENCH_SCALE_IDLE=1m shortens its idle window)"
	@echo "make kubeconfig  print the kubeconfig path: export KUBECONFIG=\$$(make -s kubeconfig)"
	@echo "make s3          deploy an S3-compatible store (versitygw, namespace etcd-s3, bucket etcd-backups) for backups to S3"
	@echo "make plugin      build the kubectl plugin bin/kubectl-etcd (docs/plugin.md)"
	@echo "make helm        build helm from Go modules (cached) as bin/helm, for charts/etcd-operator (docs/install.md)"
	@echo "make prometheus  build Prometheus from Go modules (cached) as bin/prometheus, for the e2e alert test (docs/monitoring.md)"

up: cluster image deploy

cluster:
	hack/cluster.sh up

image:
	hack/image.sh

deploy:
	hack/deploy.sh

down:
	hack/cluster.sh down

# the S3-compatible store example/etcdbackup-s3.yaml and the e2e tests of S3 backups use
s3:
	hack/s3.sh

kubeconfig:
	@hack/cluster.sh kubeconfig

# each phase timed (hack/phases.sh prints the table at the end, also when one fails); its make up
# deploys E2E_DEPLOY_DIR (hack/deploy.sh reads DEPLOY_DIR)
test:
	@mkdir -p _output
	DEPLOY_DIR='$(E2E_DEPLOY_DIR)' MAKE='$(MAKE)' WARM=hack/warm-builds.sh WARM_UNTIL=e2e \
		WARM_LOG=_output/warm-builds.log hack/phases.sh unit verify up e2e

# Go's build flags of everything built without -race (vet, the e2e suite, the plugin, the
# operator's image, the tools deploy/'s tests build): the same flags, so that a package is
# compiled once for all of them; a cold machine's make test compiles the dependencies once
# less (docs/testing.md)
GO_NORACE := CGO_ENABLED=0 go
GO_NORACE_FLAGS := -trimpath

# go test's own vet (a subset of go vet's checks) is off: the go vet above checked every
# package and its tests already. The API types' tests run the apiserver's CRD validation,
# defaulting and CEL on our CRDs: computation that starts no goroutine of ours, run without
# -race, on what go vet compiled, rather than compiling the apiserver's packages once more with
# the race detector's instrumentation (docs/testing.md)
UNIT_NORACE_PKGS := ./pkg/apis/...
unit:
	$(GO_NORACE) vet $(GO_NORACE_FLAGS) ./...
	$(GO_NORACE) vet $(GO_NORACE_FLAGS) -tags e2e ./test/e2e/...
	$(GO_NORACE) test $(GO_NORACE_FLAGS) -vet=off -count=1 $(UNIT_NORACE_PKGS)
	go test -race -vet=off -count=1 -p $(UNIT_PARALLEL) $$(go list $(UNIT_PKGS) | grep -v '/pkg/apis/')

verify: alerts-test
	@if [ -x hack/verify-codegen.sh ]; then hack/verify-codegen.sh; \
	else echo "hack/verify-codegen.sh does not exist yet: nothing to verify"; fi
	hack/helm.sh check
	hack/local/align-modules.sh

# the alerts' unit tests (promtool test rules); installs Debian's prometheus package for promtool
alerts-test:
	hack/alerts-test.sh

# the kubectl plugin, as a user installs it: kubectl runs kubectl-etcd found on PATH
plugin:
	$(GO_NORACE) build $(GO_NORACE_FLAGS) -o bin/kubectl-etcd ./cmd/kubectl-etcd

# helm of the version hack/tools/helm/go.mod pins, built from Go modules into the tool cache
# (minutes the first time, then cached), linked as bin/helm; the e2e suite's Helm test runs it
helm:
	hack/helm.sh

# the Prometheus server of the version hack/tools/prometheus/go.mod pins, with Kubernetes service
# discovery (Debian's has none), built from Go modules into the tool cache (minutes the first
# time, then cached), linked as bin/prometheus; the e2e suite's alert test runs it
prometheus:
	hack/prometheus.sh

# ends with every test's wall time, slowest first (hack/test-times.sh), pass or fail; bin/ first
# on PATH, so that the plugin's test runs `kubectl etcd` on the kubectl-etcd just built and the
# Helm test the helm of make helm. The alert test runs bin/prometheus: make prometheus runs
# beside the suite (minutes on a cold machine, while the first tests run), and the test waits
# for its exit code in PROM_BUILD.rc (E2E_PROMETHEUS_BUILD; renamed into place, so that the
# test never reads it half written); make e2e waits for it too.
PROM_BUILD = $(dir $(E2E_LOG))prometheus-build
e2e: plugin helm
	@mkdir -p $(dir $(E2E_LOG))
	rm -f $(PROM_BUILD).rc; { b=0; hack/prometheus.sh >$(PROM_BUILD).log 2>&1 || b=$$?; echo $$b >$(PROM_BUILD).rc.part; mv $(PROM_BUILD).rc.part $(PROM_BUILD).rc; } & prom=$$!; \
	eval "$$(hack/cluster.sh env)"; rc=0; KUBECONFIG=$$(hack/cluster.sh kubeconfig) PATH=$(CURDIR)/bin:$(KUBECTL_DIR):$$PATH \
		E2E_PROMETHEUS_BUILD=$(abspath $(PROM_BUILD)) \
		$(GO_NORACE) test $(GO_NORACE_FLAGS) -tags e2e ./test/e2e/ -v -timeout 60m -count=1 -parallel $(E2E_PARALLEL) $(if $(E2E_RUN),-run '$(E2E_RUN)') $(E2E_FLAGS) \
		2>&1 | tee $(E2E_LOG) || rc=$$?; wait $$prom; echo "make prometheus: exit code $$(cat $(PROM_BUILD).rc) (log $(PROM_BUILD).log)"; \
		hack/test-times.sh $(E2E_LOG); exit $$rc

# The rollout tests alone (version changes and pod-policy rollouts, test/e2e/upgrade_test.go),
# for work on the rollout or the versions.
e2e-rollout:
	$(MAKE) e2e E2E_RUN='TestUpgrade|TestDowngrade|TestUnpullableVersion|TestPodChangeRolled|TestOperatorKilledMidRollout'

bench:
	@mkdir -p _output
	KUBECONFIG=$$(hack/cluster.sh kubeconfig) PATH=$(KUBECTL_DIR):$$PATH E2E_BENCH=1 E2E_BENCH_ROUNDS=$(BENCH_ROUNDS) \
		E2E_BENCH_ONLY='$(BENCH_ONLY)' E2E_BENCH_SCALE_IDLE='$(BENCH_SCALE_IDLE)' E2E_BENCH_SCALE_N='$(BENCH_SCALE_N)' \
		$(GO_NORACE) test $(GO_NORACE_FLAGS) -tags e2e ./test/e2e/ -run '^TestBenchFigures$$' -v -timeout 120m -count=1 2>&1 | tee _output/bench.log
	@echo "== figures (also in _output/bench.log)"; grep '^\(BENCH\|TARGET\)' _output/bench.log
	E2E_BENCH_ONLY='$(BENCH_ONLY)' hack/bench-doc.sh _output/bench.log docs/bench.md
