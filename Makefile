# mediagen — run `make help` for the targets.
#
# `make run` and `make test` install what they need on Debian (ffmpeg, espeak-ng, fonts,
# staticcheck; PostgreSQL for the tests) and start PostgreSQL when it is installed but stopped.

GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
FUZZTIME    ?= 3s
# Tests of one package that run at once (go test -parallel). Most of the end-to-end tests wait
# on child processes, timers and upstream fakes rather than compute: 4 keeps 2 cores busy
# (cmd/mediagen: 183 s at 2, 126 s at 4; bench/README.md "make test").
TEST_PARALLEL ?= 4
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
ARGS        ?=

.PHONY: help build run test test-go fuzz lint bench chaos soak tools postgres clean console-shots cluster image image-test compose-up chart-test

help:
	@echo "make run    build and start the service (sandbox engine, SQLite, demo tenant; prints a key)"
	@echo "make test   everything CI runs: vet, staticcheck, unit, SQLite + PostgreSQL conformance, end-to-end, short fuzzing"
	@echo "make lint   gofmt, go vet, staticcheck"
	@echo "make bench  benchmarks under bench/ (print figures, never fail on a number)"
	@echo "make chaos  the chaos harness: 3 replicas on PostgreSQL + MinIO, then one SQLite process, 100 SIGKILLs each (about 15 minutes)"
	@echo "make soak   the billing property and the fault tests at soak size (500 requests per store, 200 tasks)"
	@echo "make build  build bin/mediagen"
	@echo "make cluster [N=3]  a local cluster: PostgreSQL, MinIO and N replicas (default 2) on ports 8081…; Ctrl-C stops it"
	@echo "make image  the container image $(IMAGE) (Dockerfile; docs/deploy.md \"Container image\")"
	@echo "make image-test  the image, then its test: version, size, a read-only serve that completes a task"
	@echo "make compose-up  the image, then docker compose up in deploy/compose (PostgreSQL, MinIO, api, worker)"
	@echo "make chart-test  the Helm chart's tests (scripts/test-chart.sh; also part of make test)"
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
# ensure-lean-ffmpeg.sh builds (once, cached) an ffmpeg and ffprobe of the same FFmpeg version
# as Debian's that start in a tenth of the time; the tests run with it first on PATH, and with
# Debian's when it cannot be built (MEDIAGEN_LEAN_FFMPEG=0 skips it). compare.sh first checks
# that it writes the same bytes as Debian's for the service's kinds of work.
# lint-openapi.sh lints the OpenAPI documents with the pinned Redocly CLI (failing when it
# cannot be installed), and the Go client, a module of its own, is vetted and tested apart
# because ./... stops at a nested module.
# -trimpath keeps absolute paths out of the build cache's keys, so a fresh clone (CI runs one
# each time) reuses the compiled packages and test binaries of an earlier run on the machine:
# compiling every test binary took 85 s (161 CPU-seconds) in a new directory and 34 s with
# this (bench/README.md#make-test). Every go command of the target uses it, so a cold machine
# compiles each package once.
test: export GOFLAGS += -trimpath
test: tools lint
	@scripts/ensure-tools.sh chromium systemd-analyze # the verification page's browser test; deploy/systemd's check
	@scripts/lint-openapi.sh # Redocly CLI (pinned, test/redocly) on docs/openapi.yaml and docs/admin-openapi.yaml
	cd client && $(GO) vet ./... && $(STATICCHECK) ./... && $(GO) test -count=1 ./... # the Go client is its own module
	@set -e; url=$$(scripts/ensure-postgres.sh); minio=$$(scripts/ensure-minio.sh); \
	  nodesdk=$$(scripts/ensure-node-sdk.sh); elevensdk=$$(scripts/ensure-elevenlabs-sdk.sh); runwaysdk=$$(scripts/ensure-runway-sdk.sh); \
	  webhookssdk=$$(scripts/ensure-webhooks-sdk.sh); \
	  ff=$$(scripts/ensure-lean-ffmpeg.sh); \
	  echo "PostgreSQL for tests: $$url"; echo "MinIO for tests: $${minio:-none}"; echo "OpenAI Node SDK for tests: $$nodesdk"; \
	  echo "ffmpeg for tests: $${ff:-Debian's, on PATH}"; [ -z "$$ff" ] || bench/leanffmpeg/compare.sh -q "$$ff"; \
	  PATH="$${ff:+$$ff:}$$PATH" MEDIAGEN_TEST_POSTGRES_URL="$$url" MEDIAGEN_TEST_MINIO="$$minio" MEDIAGEN_TEST_NODE_SDK="$$nodesdk" \
	  MEDIAGEN_TEST_ELEVENLABS_SDK="$$elevensdk" MEDIAGEN_TEST_RUNWAY_SDK="$$runwaysdk" \
	  MEDIAGEN_TEST_WEBHOOKS_SDK="$$webhookssdk" \
	  $(GO) run ./scripts/testreport -count=1 -timeout 15m -parallel $(TEST_PARALLEL) ./...
	@set -e; p=$$(scripts/ensure-promtool.sh); if [ -n "$$p" ]; then $$p check rules deploy/prometheus/*.yml && $$p test rules deploy/prometheus/tests/*.yml; fi
	@IMAGE=$(IMAGE) GO=$(GO) scripts/test-chart.sh # the Helm chart: lint, strict render, and its containers run under Docker (its own module)
	@$(MAKE) --no-print-directory fuzz

# Runs every fuzz target briefly (FUZZTIME each, two at a time) on top of the seed corpora go
# test already ran (scripts/fuzz.sh).
fuzz:
	@FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

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

# The randomized and fault-injecting end-to-end tests at soak size: make test runs them at a
# size that exercises every route and fault within its time budget (60 property requests per
# store, 80 and 60 fault tasks); this runs 500 requests per store and 200 tasks per fault test,
# to find rarer interleavings (about 2 minutes on 2 cores).
soak: tools
	@set -e; url=$$(scripts/ensure-postgres.sh); \
	  MEDIAGEN_TEST_POSTGRES_URL="$$url" MEDIAGEN_PROPERTY_REQUESTS=500 MEDIAGEN_FAULT_TASKS=200 \
	  $(GO) test -count=1 -timeout 30m -run '^(TestPropertyEveryCharge.*|TestArkFaults.*|TestOpenAIFaults.*)$$' ./cmd/mediagen

# The container image. ensure-base-images.sh starts dockerd when it is not running and, where
# no registry can be reached, makes the base images the Dockerfile names from Debian packages
# (once; a tag that exists is kept), so the Dockerfile is the same everywhere.
IMAGE ?= mediagen:$(VERSION)
IMAGE_SOURCE ?= $(shell git remote get-url origin 2>/dev/null)
image:
	@MEDIAGEN_BASE_IMAGES="debian golang" scripts/ensure-base-images.sh
	docker build -t $(IMAGE) -t mediagen:latest --build-arg VERSION=$(VERSION) --build-arg SOURCE=$(IMAGE_SOURCE) .
	@docker image inspect $(IMAGE) --format '$(IMAGE): {{.Size}} bytes' && docker run --rm $(IMAGE) version

# The image's tests (deploy/image_test.go, compose_test.go): `version`, size, a read-only serve
# on SQLite that completes a sandbox task, its HEALTHCHECK; the compose stack up, a task through
# api and worker, the data kept across a second up. Not in `make test` yet: the first build of the
# image takes minutes (bench/README.md "Container image").
image-test: image
	@MEDIAGEN_BASE_IMAGES="postgres minio" scripts/ensure-base-images.sh
	cd deploy && MEDIAGEN_TEST_IMAGE=$(IMAGE) $(GO) test -count=1 -run 'TestImage|TestCompose' -v .

# The compose stack (docs/deploy.md "docker compose"): the image, the PostgreSQL and MinIO images
# (made locally when no registry answers), then `docker compose up -d` and the first-start note.
# `docker compose` (v2) when it is installed, else Debian's docker-compose (1.29).
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
compose-up: image
	@MEDIAGEN_BASE_IMAGES="postgres minio" scripts/ensure-base-images.sh
	cd deploy/compose && MEDIAGEN_IMAGE=$(IMAGE) $(COMPOSE) up -d && $(COMPOSE) logs -f hello

# The Helm chart's tests alone (deploy/helm/test): helm built once from the module proxy, the
# image built (cached layers), then lint, strict render and the render-and-run test.
chart-test:
	@IMAGE=$(IMAGE) GO=$(GO) scripts/test-chart.sh

clean:
	rm -rf bin
