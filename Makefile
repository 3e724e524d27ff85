# mediagen — run `make help` for the targets.
#
# `make run` and `make test` install what they need on Debian (ffmpeg, espeak-ng, fonts,
# staticcheck; PostgreSQL for the tests) and start PostgreSQL when it is installed but stopped.

GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
FUZZTIME    ?= 3s
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
ARGS        ?=

.PHONY: help build run test test-go fuzz lint bench chaos tools postgres clean console-shots cluster

help:
	@echo "make run    build and start the service (sandbox engine, SQLite, demo tenant; prints a key)"
	@echo "make test   everything CI runs: vet, staticcheck, unit, SQLite + PostgreSQL conformance, end-to-end, short fuzzing"
	@echo "make lint   gofmt, go vet, staticcheck"
	@echo "make bench  benchmarks under bench/ (print figures, never fail on a number)"
	@echo "make chaos  the chaos harness: 3 replicas on PostgreSQL + MinIO, then one SQLite process, 100 SIGKILLs each (about 15 minutes)"
	@echo "make build  build bin/mediagen"
	@echo "make cluster [N=3]  a local cluster: PostgreSQL, MinIO and N replicas (default 2) on ports 8081…; Ctrl-C stops it"
	@echo "make console-shots  the console's browser tests, writing screenshots of both consoles to docs/console"

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/mediagen ./cmd/mediagen

run: tools build
	./bin/mediagen serve $(ARGS)

tools:
	@scripts/ensure-tools.sh

# A local cluster (scripts/cluster.sh): its own database, MinIO and bucket, N replicas.
N ?= 2
cluster: tools build
	@N=$(N) MEDIAGEN_BIN=bin/mediagen scripts/cluster.sh

postgres:
	@scripts/ensure-postgres.sh >/dev/null

$(STATICCHECK):
	GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

# The PostgreSQL URL comes from ensure-postgres.sh, which starts or installs a server, and the
# MinIO binary from ensure-minio.sh, which builds and caches it; under CI=true the PostgreSQL
# and S3 tests fail instead of skipping when either cannot be had.
# lint-openapi.sh lints the OpenAPI documents with the pinned Redocly CLI (failing when it
# cannot be installed), and the Go client, a module of its own, is vetted and tested apart
# because ./... stops at a nested module.
test: tools lint
	@scripts/ensure-tools.sh chromium systemd-analyze # the verification page's browser test; deploy/systemd's check
	@scripts/lint-openapi.sh # Redocly CLI (pinned, test/redocly) on docs/openapi.yaml and docs/admin-openapi.yaml
	cd client && $(GO) vet ./... && $(STATICCHECK) ./... && $(GO) test -count=1 ./... # the Go client is its own module
	@set -e; url=$$(scripts/ensure-postgres.sh); minio=$$(scripts/ensure-minio.sh); \
	  nodesdk=$$(scripts/ensure-node-sdk.sh); \
	  echo "PostgreSQL for tests: $$url"; echo "MinIO for tests: $${minio:-none}"; echo "OpenAI Node SDK for tests: $$nodesdk"; \
	  MEDIAGEN_TEST_POSTGRES_URL="$$url" MEDIAGEN_TEST_MINIO="$$minio" MEDIAGEN_TEST_NODE_SDK="$$nodesdk" $(GO) test -count=1 -timeout 15m ./...; \
	  echo "store conformance suite, per driver:"; \
	  MEDIAGEN_TEST_POSTGRES_URL="$$url" $(GO) test -count=1 -run 'Conformance' -v ./internal/store/... \
	    | grep -E '^(=== RUN|--- |    --- |ok|FAIL)' | grep -v '=== RUN'
	@set -e; p=$$(scripts/ensure-promtool.sh); if [ -n "$$p" ]; then $$p check rules deploy/prometheus/*.yml && $$p test rules deploy/prometheus/tests/*.yml; fi
	@$(MAKE) --no-print-directory fuzz

# Runs every fuzz target briefly (FUZZTIME each) on top of the seed corpora go test already ran.
# Go 1.26's fuzz coordinator can report a bare "context deadline exceeded" when -fuzztime ends
# while a worker is mid-call on a busy machine (golang/go#75804, fixed in Go 1.27). Such a run
# wrote no failing input, so it is run once more; a real finding ("Failing input written")
# or any other failure fails at once.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    for try in 1 2; do \
	      if $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -parallel=2 $$pkg >/tmp/mediagen-fuzz.log 2>&1; then break; fi; \
	      if [ $$try = 1 ] && grep -q 'context deadline exceeded' /tmp/mediagen-fuzz.log && ! grep -q 'Failing input written' /tmp/mediagen-fuzz.log; then \
	        echo "fuzz $$pkg $$f: the fuzz coordinator's deadline race (golang/go#75804), no failing input; running it again"; continue; fi; \
	      cat /tmp/mediagen-fuzz.log; exit 1; \
	    done; \
	  done; \
	done; echo "fuzz: all targets passed"

# The console's browser tests in headless Chromium; they write PNGs of the main pages of both
# consoles at 390x844 and 1440x900 to docs/console (<console>-<page>-<phone|desktop>.png).
console-shots: tools
	@scripts/ensure-tools.sh chromium
	@mkdir -p docs/console
	$(GO) test ./cmd/mediagen/ -run 'Console.*Chromium' -count=1 -v -console-shots $(CURDIR)/docs/console

bench: tools
	$(GO) run ./bench/probe
	$(GO) run ./bench/runner -tasks 100000 -drain 20000
	$(GO) run ./bench/api
	$(GO) run ./bench/tracing

# The chaos harness (bench/chaos): its own PostgreSQL and MinIO, 3 replicas killed 100 times,
# then one SQLite process killed 100 times; prints the figures and fails when one is wrong.
# CHAOS_ARGS passes flags (e.g. CHAOS_ARGS="-duration 1m -kills 20").
CHAOS_ARGS ?=
chaos: tools
	@scripts/ensure-postgres.sh >/dev/null; minio=$$(scripts/ensure-minio.sh); mkdir -p bench/results; \
	  $(GO) run ./bench/chaos -minio "$$minio" -json bench/results/chaos.json $(CHAOS_ARGS)

clean:
	rm -rf bin
