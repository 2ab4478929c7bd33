# Strata: `make run` starts a single broker, `make test` installs the test
# dependencies and runs every test. `make help` lists the targets.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO ?= go
# -mod=readonly: a build never rewrites go.mod/go.sum behind your back.
export GOFLAGS ?= -mod=readonly

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BIN     := bin/strata
CONFIG  ?= deploy/server.properties

# Fuzz targets run by fuzz-smoke (in `make test`) and fuzz, as package:Target.
# A listed target that does not exist fails the run.
FUZZ_TARGETS ?= \
	./tier/record:FuzzValidate \
	./tier/record:FuzzSplit \
	./tier/record:FuzzScan \
	./tier/segment:FuzzRecover \
	./tier/segment:FuzzTxnIndexRecovery \
	./broker/wire:FuzzDecodeRequest \
	./broker/sasl:FuzzScramMessages \
	./broker/sasl:FuzzPlainMessage \
	./broker/sasl:FuzzJAAS \
	./broker/sasl:FuzzOAuthInitialResponse \
	./tier/objstore:FuzzValidateKey \
	./tier/producer:FuzzDecodeSnapshot \
	./broker/txn:FuzzDecodeRecord \
	./config:FuzzParseProperties
FUZZTIME      ?= 10s
FUZZTIME_LONG ?= 2m

TEST_TIMEOUT ?= 20m
# Test artifacts (t.ArtifactDir: the console's browser screenshots) are
# kept under TEST_OUTPUT/_artifacts.
TEST_OUTPUT ?= $(CURDIR)/test-output

STATICCHECK_VERSION := v0.8.2
GOBIN_DIR   := $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)
STATICCHECK := $(GOBIN_DIR)/staticcheck

.PHONY: build run deps test vet unit fuzz-smoke fuzz bench lint chaos cluster clean clean-data help compose-test

build: ## build bin/strata
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/strata

run: build ## start one broker on 127.0.0.1:9092 (embedded etcd, data in ./data)
	./$(BIN) serve --config $(CONFIG)

deps: ## install the test dependencies (kcat, python3-kafka, python3-confluent-kafka, etcd-server)
	bash scripts/install-test-deps.sh
	bash scripts/install-minio.sh

test: deps ## vet, all tests with -race, a short run of every fuzz target, then compose-test
	$(MAKE) --no-print-directory vet
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory compose-test

vet:
	$(GO) vet ./...

unit:
	@mkdir -p $(TEST_OUTPUT)
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -artifacts -outputdir=$(TEST_OUTPUT) ./...

fuzz-smoke: ## run each fuzz target for FUZZTIME (10s)
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		list=$$($(GO) test -list "^$$fn$$" "$$pkg"); \
		if ! grep -qx "$$fn" <<<"$$list"; then \
			echo "fuzz: $$fn not found in $$pkg (listed in FUZZ_TARGETS)" >&2; exit 1; \
		fi; \
		echo "fuzz: $$pkg $$fn for $(FUZZTIME)"; \
		bash scripts/fuzz-run.sh "$(GO)" "$$pkg" "$$fn" "$(FUZZTIME)" || exit 1; \
	done

fuzz: ## run each fuzz target for FUZZTIME_LONG (2m)
	$(MAKE) --no-print-directory fuzz-smoke FUZZTIME=$(FUZZTIME_LONG)

bench: ## benchmarks: produce/consume and groups vs kfake, cleaner vs its ceiling, cluster, tiered storage vs raw MinIO GETs, fetch sessions vs none
	$(GO) run ./test/bench -tls=false
	$(GO) run ./test/bench -systems "" -codecs "" -txn=false -records 1000000
	$(GO) run ./test/bench/groups
	$(GO) run ./test/bench/cleaner
	$(GO) run ./test/bench/cluster
	$(GO) run ./test/bench/tier
	$(GO) run ./test/bench/sessions
	$(GO) run ./test/bench/acl

lint: ## no binaries or large files in git, gofmt, go vet, staticcheck
	bash scripts/check-tree.sh
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*'); \
	unformatted=$$(gofmt -l $$files); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@if ! [ -x "$(STATICCHECK)" ] || ! "$(STATICCHECK)" -version | grep -qF "($(patsubst v%,%,$(STATICCHECK_VERSION)))"; then \
		echo "installing staticcheck $(STATICCHECK_VERSION)"; \
		GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi
	$(STATICCHECK) ./...

# Size of `make chaos`: records in the stream, nemesis rounds (8 faults
# each, 2 in TestNemesisTxn, 3 in TestNemesisTxnChain), seconds each etcd
# outage lasts and the group protocols TestNemesisTxnChain runs with;
# CHAOS_SEED replays a run (its seed is printed).
CHAOS_RECORDS         ?= 200000
CHAOS_ROUNDS          ?= 6
CHAOS_ETCD_OUTAGE     ?= 30
CHAOS_GROUP_PROTOCOLS ?= eager,cooperative,kip848
CHAOS_SEED            ?=

chaos: deps ## fault-injection tests against a 3-broker cluster, and the hostile-input suite with more kills and connections (longer than in `make test`)
	STRATA_FAULT_RECORDS=$(CHAOS_RECORDS) STRATA_FAULT_ROUNDS=$(CHAOS_ROUNDS) STRATA_FAULT_SEED=$(CHAOS_SEED) \
		STRATA_FAULT_ETCD_OUTAGE=$(CHAOS_ETCD_OUTAGE) STRATA_FAULT_GROUP_PROTOCOLS=$(CHAOS_GROUP_PROTOCOLS) \
		$(GO) test -race -count=1 -v -timeout $(TEST_TIMEOUT) -run TestNemesis ./test/fault/
	STRATA_HOSTILE_LONG=1 $(GO) test -race -count=1 -v -timeout $(TEST_TIMEOUT) ./test/hostile/

compose-test: ## run deploy/compose.yaml for real with images built here (skips when docker cannot be started)
	bash scripts/compose-test.sh

cluster: build ## etcd + 3 brokers on loopback (19092-19094, data in ./data/cluster)
	bash deploy/cluster.sh

clean: ## remove build output
	rm -rf bin

clean-data: ## remove the data of `make run` (./data)
	rm -rf data

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'
