# etcd-operator: see README.md. `make demo` shows it working, `make test` runs the tests.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

CACHE          := $(shell hack/tools.sh path)
CONTROLLER_GEN := $(CACHE)/bin/controller-gen-v0.23.0
KUSTOMIZE      := $(CACHE)/bin/kustomize-v5.8.2
BENCH_DIR      ?= $(CURDIR)/.bench
GO_TEST_FLAGS  ?= -count=1 -timeout 45m
export GOFLAGS := -buildvcs=false

.PHONY: all
all: build

##@ Tools

.PHONY: tools
tools: ## Build (once, cached outside the clone) kube-apiserver & co, etcd, MinIO, promtool, prometheus, controller-gen, kustomize.
	hack/tools.sh all

$(CONTROLLER_GEN) $(KUSTOMIZE):
	hack/tools.sh gen

.PHONY: helm
helm: ## Build (once, cached) the helm CLI at go.mod's helm.sh/helm/v3 version; only the e2e tier runs it.
	hack/tools.sh helm

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from the API types and controller markers.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths="{./controllers/...,./internal/webhookcert/...,./internal/pinkey/...}" output:rbac:artifacts:config=config/rbac

.PHONY: fmt
fmt:
	gofmt -l -w .

.PHONY: verify
verify: generate manifests bundle ## Fail if generated files are stale or code is unformatted or vet complains.
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt needed on the files above"; exit 1; }
	@git diff --exit-code -- api config bundle bundle.Dockerfile helm-charts/etcd-operator || { echo "generated files are stale: run make generate manifests bundle and commit"; exit 1; }
	go vet ./...
	go vet -tags integration $(TEST_SPLIT)

.PHONY: build
build: kubectl-etcd ## Build the operator, the bench command and the kubectl etcd plugin into bin/.
	go build -o bin/etcd-operator .
	go build -o bin/bench ./test/cmd/bench

.PHONY: kubectl-etcd
kubectl-etcd: ## Build the kubectl plugin bin/kubectl-etcd (copy it onto PATH: kubectl etcd ...).
	go build -o bin/kubectl-etcd ./internal/cmd/kubectl-etcd

##@ Test

# Test tiers: every package with tests is in exactly one (make test-tiers checks it, and
# make test runs the check). A package goes to the heaviest tier one of its tests needs.
#   unit         pure Go: no tool cache, no root, no namespaces; seconds.
#   integration  processes from `make tools`: envtest's kube-apiserver, etcd, MinIO, CoreDNS,
#                opm; runtest and test/bench also enter private namespaces (root).
#   e2e          the local bench: real nodes, the operator running against them.
# A package in TEST_SPLIT has both: its files marked `//go:build integration` hold the tests
# that need the tool cache (integration, run alone with -run hack/integration-tests.sh); its
# other tests use fakes and run in the unit tier, built without the tag.
# Benchmarks measure (ratios, no pass/fail) and run only with make benchmark (the bench's
# long ones need more than go test's default 10-minute timeout; backupcrypt's is pure Go).
TEST_SPLIT       := ./controllers/...
TEST_UNIT        := ./api/v1 ./hack/bundle/... ./hack/image ./hack/release ./hack/runbundle/... ./internal/ociimage \
                    ./internal/test/poll ./internal/cmd/... ./internal/apart ./internal/snapshotcheck \
                    ./internal/planner/... ./internal/render ./internal/test/testenv ./internal/operatorimage \
                    ./internal/backupstorage ./internal/restoreorigin ./internal/test/fixture \
                    ./internal/schedule ./internal/backupcrypt ./internal/backupselect ./internal/tlsproof ./internal/certissue ./internal/certmanager ./internal/pinsign ./internal/etcdauth ./internal/kubectletcd \
                    ./test/cmd/pause ./test/monitoring ./internal/test/onsignal $(TEST_SPLIT)
TEST_INTEGRATION := . ./api/v1beta2 ./hack/catalog/... ./internal/backup \
                    ./internal/etcdadmin ./internal/test/etcdtest ./internal/render/runtest \
                    ./internal/restore ./internal/webhook/... ./internal/webhookcert ./internal/pinkey ./internal/kubectletcd/etcdctltest ./test/bench \
                    ./test/bench/clusterdns ./test/bench/images ./test/bench/olm ./test/olm \
                    ./internal/test/promtest ./test/monitoring/promtool ./internal/test/testenv/signaltest
TEST_E2E         := ./test/e2e ./test/bench/e2e ./test/cmd/bench
BENCHMARKS       := ./test/benchmark/...
# The e2e tiers run on this many workers at once (each test has a bench of its own; they
# mostly wait on pods and elections), taking a test only when the CPUs have room for its
# bench (hack/go-test-shards.sh, "Admission").
E2E_SHARDS       ?= 2
# make test runs this many of them beside its unit and integration lane, the others once
# that lane has ended. None: on a slower 2-core machine (2026-12-06) the lane's envtest
# servers and compiles beside two benches starved them (kubelets missed their
# node leases, etcd under the tests' write loads stalled past the clients' 16 s retries,
# a CoreOS-style member failed its liveness probe), and the heaviest tests, which start
# first, failed every time; each of them passed alone. On a faster machine
# E2E_SHARDS_BESIDE_LANE=3 E2E_SHARDS=4 was the schedule until then (about 28 min).
E2E_SHARDS_BESIDE_LANE ?= 0

.PHONY: test
test: tools helm verify test-tiers bench-binaries ## All three tiers: unit then integration in one lane, then e2e on E2E_SHARDS workers (E2E_SHARDS_BESIDE_LANE of them beside the lane).
	hack/go-test-shards.sh $(E2E_SHARDS_BESIDE_LANE)+$$(($(E2E_SHARDS) - $(E2E_SHARDS_BESIDE_LANE))) "$(GO_TEST_FLAGS)" ./test/e2e $(filter-out ./test/e2e,$(TEST_E2E)) \
	  -- "$(MAKE) --no-print-directory test-unit" "$(MAKE) --no-print-directory test-integration"

.PHONY: test-unit
test-unit: ## Pure Go unit tests: no tools, no root; under a minute once compiled.
	go test $(GO_TEST_FLAGS) $(TEST_UNIT)

.PHONY: test-integration
test-integration: tools ## Tests against real processes: envtest, etcd, MinIO, CoreDNS, opm, promtool; root for namespaces.
	rc=0; go test $(GO_TEST_FLAGS) $(TEST_INTEGRATION) || rc=1; \
	go test $(GO_TEST_FLAGS) -tags integration -run "$$(hack/integration-tests.sh $(TEST_SPLIT))" $(TEST_SPLIT) || rc=1; \
	exit $$rc

.PHONY: test-e2e
test-e2e: tools helm bench-binaries ## End-to-end tests on the local bench (real nodes); root. E2E_SHARDS=1 runs them one at a time.
	hack/go-test-shards.sh $(E2E_SHARDS) "$(GO_TEST_FLAGS)" ./test/e2e $(filter-out ./test/e2e,$(TEST_E2E))

# Every e2e test process builds the operator image's binary (and pause's) for its bench:
# static, -trimpath, so none of it comes from the tests' own compiles. With a cold Go build
# cache the first test of every worker compiled all of it at once, which on 2 cores took
# 10 minutes and starved the benches starting beside it (their API servers timed out; a
# cold .ci/run failed 12 e2e tests on 2026-12-06). Compiled here once, before any bench,
# each process only links (seconds). Same command and environment as test/bench/images.goBuild.
.PHONY: bench-binaries
bench-binaries:
	d=$$(mktemp -d) && CGO_ENABLED=0 GOOS=linux GOARCH=$$(go env GOARCH) go build -trimpath -o $$d/ . ./test/cmd/pause; \
	rc=$$?; rm -rf $$d; exit $$rc

.PHONY: test-tiers
test-tiers: ## Fail unless every package with tests is in exactly one tier.
	hack/test-tiers.sh unit "$(TEST_UNIT)" integration "$(TEST_INTEGRATION)" e2e "$(TEST_E2E)" benchmark "$(BENCHMARKS)" split "$(TEST_SPLIT)"

.PHONY: benchmark
benchmark: tools ## Benchmarks on the local bench (ratios against a baseline measured in the same run).
	go test -run '^$$' -bench . -benchtime 1x -timeout 120m $(BENCHMARKS)
	go test -run '^$$' -bench . ./internal/backupcrypt

##@ Images

# IMG names the operator image everywhere (CSV, config/manager, chart); docker-build and
# docker-push need docker or podman, image-build/image-push need only Go (no daemon) and
# make the same image (internal/ociimage; TestOperatorSpecMatchesDockerfile keeps them equal).
GOARCH_IMG ?= amd64

.PHONY: docker-build
docker-build: ## Build the operator image $(IMG) from the Dockerfile with docker or podman.
	@test -n "$(CONTAINER_TOOL)" || { echo "docker-build needs docker or podman; use make image-build"; exit 1; }
	$(CONTAINER_TOOL) build --build-arg TARGETARCH=$(GOARCH_IMG) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push $(IMG) with docker or podman.
	@test -n "$(CONTAINER_TOOL)" || { echo "docker-push needs docker or podman; use make image-push"; exit 1; }
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: manager-static
manager-static:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH_IMG) go build -trimpath -ldflags=-s -o bin/manager .

.PHONY: image-build
image-build: manager-static ## Build $(IMG) without a daemon into bin/operator-image.tar (docker/podman load, ctr import).
	go run ./hack/image --binary bin/manager --arch $(GOARCH_IMG) --tag $(IMG) --tar bin/operator-image.tar

.PHONY: image-push
image-push: manager-static ## Build $(IMG) without a daemon and push it to the registry IMG names.
	go run ./hack/image --binary bin/manager --arch $(GOARCH_IMG) --tag $(IMG) --push

##@ Bundle

# VERSION is the bundle `make bundle` writes; PREV_VERSION the released one it replaces,
# whose bundle is kept unchanged in $(RELEASED_DIR)/$(PREV_VERSION) (test/olm checks the
# upgrade from it). Unless given, PREV_VERSION is the newest version there below VERSION
# (directories named X.Y.Z, ordered by sort -V; none: no replaces). After releasing
# VERSION, commit the release's bundle/ as $(RELEASED_DIR)/$(VERSION) and bump VERSION.
VERSION         ?= 0.2.0
RELEASED_DIR    ?= hack/bundle/released
ifeq ($(origin PREV_VERSION),undefined)
PREV_VERSION    := $(shell { ls '$(RELEASED_DIR)' 2>/dev/null; echo '$(VERSION)'; } | sort -uV | awk -v v='$(VERSION)' '$$0 == v { exit } { p = $$0 } END { print p }')
endif
CHANNELS        ?= alpha
DEFAULT_CHANNEL ?= alpha
# IMAGE_TAG_BASE is where the images are published. example.com is a placeholder: set it
# to your registry (make bundle IMAGE_TAG_BASE=<registry>/etcd-operator regenerates the
# CSV; config/manager and the Helm chart name the same image, test/olm keeps them equal).
IMAGE_TAG_BASE  ?= example.com/etcd-operator
IMG             ?= $(IMAGE_TAG_BASE):v$(VERSION)
BUNDLE_IMG      ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
# PREV_BUNDLE_IMG is the released bundle's image, which the catalog names and catalog-push pushes.
PREV_BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(PREV_VERSION)
CATALOG_IMG     ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
CONTAINER_TOOL  ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)
# OFFLINE=1 builds and pushes the bundle image without a container daemon (hack/catalog);
# it is the default when neither docker nor podman is installed. Catalogs are always built
# that way: opm (hack/tools.sh olm) renders the file-based catalog and prebuilds its cache.
OFFLINE         ?= $(if $(CONTAINER_TOOL),,1)
OPM_DIR         := $(CACHE)/opm-v1.60.0
CATALOG_BUNDLES := $(RELEASED_DIR)/$(PREV_VERSION)=$(PREV_BUNDLE_IMG) bundle=$(BUNDLE_IMG)

.PHONY: bundle
bundle: manifests ## Generate the OLM bundle (bundle/, bundle.Dockerfile) and the install chart's CRD/RBAC copies from config/.
	go run ./hack/bundle --version $(VERSION) --image $(IMG) --channels $(CHANNELS) --default-channel $(DEFAULT_CHANNEL) \
		$(if $(PREV_VERSION),--replaces etcd-operator.v$(PREV_VERSION)) \
		--out bundle --dockerfile bundle.Dockerfile --chart helm-charts/etcd-operator

.PHONY: bundle-validate
bundle-validate: ## Validate bundle/ with OLM's validators and check it and the install chart are up to date.
	go test ./test/olm/ ./hack/bundle/...

.PHONY: bundle-build
bundle-build: bundle ## Build the bundle image $(BUNDLE_IMG): docker/podman, or OFFLINE=1 into bin/bundle-image.tar.
ifeq ($(OFFLINE),)
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .
else
	@mkdir -p bin
	go run ./hack/catalog bundle --dir bundle --tag $(BUNDLE_IMG) --tar bin/bundle-image.tar
endif

.PHONY: bundle-push
bundle-push: ## Push $(BUNDLE_IMG) (OFFLINE=1: build from bundle/ and push; a loopback registry is plain HTTP).
ifeq ($(OFFLINE),)
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)
else
	go run ./hack/catalog bundle --dir bundle --tag $(BUNDLE_IMG) --push
endif

$(OPM_DIR)/.done:
	hack/tools.sh olm

.PHONY: catalog-build
catalog-build: $(OPM_DIR)/.done ## Build the catalog image $(CATALOG_IMG) (channel $(DEFAULT_CHANNEL): $(PREV_VERSION) -> $(VERSION)) into bin/catalog-image.tar, its catalog in bin/catalog.yaml.
	@mkdir -p bin
	go run ./hack/catalog catalog --opm-dir $(OPM_DIR) --channel $(DEFAULT_CHANNEL) $(addprefix --bundle ,$(CATALOG_BUNDLES)) \
		--tag $(CATALOG_IMG) --tar bin/catalog-image.tar --fbc-out bin/catalog.yaml

.PHONY: catalog-push
catalog-push: $(OPM_DIR)/.done ## Push the released bundle $(PREV_BUNDLE_IMG) and the catalog $(CATALOG_IMG) (after bundle-push for $(BUNDLE_IMG)).
	go run ./hack/catalog bundle --dir $(RELEASED_DIR)/$(PREV_VERSION) --tag $(PREV_BUNDLE_IMG) --push
	go run ./hack/catalog catalog --opm-dir $(OPM_DIR) --channel $(DEFAULT_CHANNEL) $(addprefix --bundle ,$(CATALOG_BUNDLES)) \
		--tag $(CATALOG_IMG) --push

# RUN_NAMESPACE is where run-bundle installs (created if missing). The cluster is the one
# KUBECONFIG names, with OLM installed; the catalog image is pushed beside BUNDLE_IMG.
RUN_NAMESPACE ?= etcd-operator-system

.PHONY: run-bundle
run-bundle: $(OPM_DIR)/.done ## Install $(BUNDLE_IMG) through OLM as `operator-sdk run bundle` does (one-bundle catalog, OperatorGroup, Subscription, CSV Succeeded).
	go run ./hack/runbundle run --bundle $(BUNDLE_IMG) --namespace $(RUN_NAMESPACE) --opm-dir $(OPM_DIR)

.PHONY: run-bundle-upgrade
run-bundle-upgrade: $(OPM_DIR)/.done ## Upgrade what run-bundle installed to $(BUNDLE_IMG), as `operator-sdk run bundle-upgrade` does.
	go run ./hack/runbundle upgrade --bundle $(BUNDLE_IMG) --namespace $(RUN_NAMESPACE) --opm-dir $(OPM_DIR)

##@ Release

# REGISTRY is where a release's images go (host[:port][/path]); DIST the directory it is
# written to. The operator image is built for every RELEASE_PLATFORMS (one OCI index), the
# kubectl plugin for every PLUGIN_PLATFORMS; nothing needs a container daemon. A release is
# made with the defaults (hack/release's tests keep them complete); TestReleaseArtifacts
# narrows PLUGIN_PLATFORMS to the machine's to spare CI three cross-compiles. The builds use
# the flags of the bench's operator build (CGO_ENABLED=0 -trimpath; -ldflags only changes
# the link), so the linux/amd64 compiles come from the Go build cache.
REGISTRY          ?=
DIST              ?= dist/$(VERSION)
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
PLUGIN_PLATFORMS  ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
RELEASE_BUILD     := bin/release
# The time a release records (index.yaml, the chart package): the commit's, so two
# releases of one commit are the same bytes; set SOURCE_DATE_EPOCH to choose another.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)

.PHONY: release
release: $(KUSTOMIZE) $(OPM_DIR)/.done ## Write release $(VERSION) for REGISTRY into $(DIST): images (OCI layout), chart .tgz + index.yaml, install.yaml, catalog.yaml, kubectl-etcd binaries, SHA256SUMS.
	@test -n "$(REGISTRY)" || { echo "make release needs REGISTRY=<registry host[:port][/path]> (where release-push will push)"; exit 1; }
	@mkdir -p "$(RELEASE_BUILD)"
	tmp=$$(go run ./hack/release begin --out "$(DIST)"); trap 'rm -rf "$$tmp"' EXIT; \
	for p in $(RELEASE_PLATFORMS); do \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags=-s -o $(RELEASE_BUILD)/manager-$${p%/*}-$${p#*/} . ; done; \
	for p in $(PLUGIN_PLATFORMS); do \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags=-s -o "$$tmp/kubectl-etcd-$${p%/*}-$${p#*/}" ./internal/cmd/kubectl-etcd; done; \
	img=$$(go run ./hack/image $(foreach p,$(RELEASE_PLATFORMS),--binary $(p)=$(RELEASE_BUILD)/manager-$(subst /,-,$(p))) \
	  --tag $(REGISTRY)/etcd-operator:v$(VERSION) --oci "$$tmp/images"); \
	SOURCE_DATE_EPOCH="$(SOURCE_DATE_EPOCH)" go run ./hack/release assemble --out "$$tmp" --version $(VERSION) --prev-version "$(PREV_VERSION)" --released-dir $(RELEASED_DIR) --registry $(REGISTRY) \
	  --image "$$img" --channel $(DEFAULT_CHANNEL) --opm-dir $(OPM_DIR) --kustomize $(KUSTOMIZE) \
	  --plugin-platforms "$(PLUGIN_PLATFORMS)"; \
	go run ./hack/release finish --tmp "$$tmp" --out "$(DIST)"

.PHONY: release-push
release-push: ## Push the images of the release in $(DIST) (after make release) to the registry they name.
	go run ./hack/release push --out "$(DIST)"

##@ Demo

.PHONY: demo
demo: tools build ## Local bench + CRDs + operator + a 3-member EtcdCluster; Ctrl-C or `make demo-down` stops it.
	hack/demo.sh "$(BENCH_DIR)"

.PHONY: demo-down
demo-down: ## Stop a demo started in another terminal.
	-bin/bench down --dir "$(BENCH_DIR)"

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-17s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
