# Cairn build and test entry points. `make test` is what CI (.ci/run) and the README run.
GO       ?= go
# Fuzz budgets are execution counts, not durations: a duration -fuzztime races Go's fuzz
# coordinator shutdown (golang/go#75804, unfixed in go1.26) and fails with a bare
# "context deadline exceeded" and no crasher on a loaded machine.
FUZZTIME ?= 100000x
PKGS     := ./...

.PHONY: all build test vet lint unit minio fuzz-smoke test-long bench-micro bench-report console-screenshots run clean

all: build

build:
	$(GO) build -o bin/cairn ./cmd/cairn

## test: everything CI checks — formatting, vet, staticcheck, the race-enabled test suite (unit,
## property, conformance and integration tests with real processes), and a short run of
## every fuzz target.
test: vet unit fuzz-smoke

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	@$(MAKE) --no-print-directory lint

## lint: staticcheck at a pinned version, which must report nothing (a finding that is not a
## bug is fixed anyway or suppressed where it stands with a //lint:ignore and its reason).
## `go run pkg@version` builds it once into the module cache, outside this module's go.mod.
## The tree's shape (file and function length, doc.go, the docs of record) is checked by
## the tests of internal/tidy.
STATICCHECK_VERSION ?= v0.8.2
lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

## unit: the race-enabled tests of every package, with a watchdog: go test's -timeout
## applies to each package's test binary and, when it fires, panics with every goroutine's
## stack, so a hung test names itself (and where it waits) in minutes rather than holding
## CI to its 60-minute budget. UNIT_TIMEOUT bounds every package but ./integration: the
## slowest of them (api/server, shard/host, api/rest under -race on 2 cores) take a few
## minutes. INTEGRATION_TIMEOUT bounds ./integration, whose clock also runs while its
## TestMain builds cairn twice (plain and -race; 8 minutes on a loaded 2-core machine with a
## cold cache) and the upgrade tests build the previous release: its two longest tests
## take about 1.5 minutes together. ./integration runs beside the other packages, which
## run one at a time (-p 1), so two test binaries share the machine as `go test -p 2 ./...`
## had them; its output follows theirs.
UNIT_TIMEOUT        ?= 15m
INTEGRATION_TIMEOUT ?= 30m
## TEST_OUTPUT keeps what the integration tests save as artifacts (t.ArtifactDir: the web
## console's screenshots of each destination), for CI to collect.
TEST_OUTPUT         ?= test-output
unit: minio
	@bin=$$(GO=$(GO) scripts/minio.sh) || exit 1; \
	log=$$(mktemp); \
	mkdir -p $(TEST_OUTPUT) && out=$$(cd $(TEST_OUTPUT) && pwd); \
	CAIRN_MINIO_BIN=$$bin $(GO) test -race -count=1 -timeout $(INTEGRATION_TIMEOUT) -artifacts -outputdir "$$out" ./integration >$$log 2>&1 & ipid=$$!; \
	ulog=$$(mktemp); rcf=$$(mktemp); \
	{ CAIRN_MINIO_BIN=$$bin $(GO) test -race -count=1 -p 1 -timeout $(UNIT_TIMEOUT) $$($(GO) list $(PKGS) | grep -v '/integration$$') 2>&1; echo $$? >$$rcf; } | tee $$ulog; \
	urc=$$(cat $$rcf); wait $$ipid; irc=$$?; cat $$log; \
	if [ $$urc -ne 0 ] || [ $$irc -ne 0 ]; then \
		echo "== failures (the lines above that name them; servers' logs left out) =="; \
		cat $$ulog $$log | grep -E -e '^[[:space:]]*--- FAIL' -e '^[[:space:]]+[[:alnum:]_]+_test\.go:[0-9]+:' \
			-e '^panic:' -e '^goleak' -e '^FAIL' -e 'found unexpected goroutines' | head -200; \
	fi; \
	rm -f $$log $$ulog $$rcf; \
	test $$urc -eq 0 && test $$irc -eq 0

## minio: the MinIO server the blob/s3 tests run against, built once from a pinned source
## version into ${CAIRN_CACHE_DIR:-$HOME/.cache/cairn} (see scripts/minio.sh).
minio:
	@GO=$(GO) scripts/minio.sh >/dev/null

# One target per invocation: go test -fuzz accepts a single target.
FUZZ_TARGETS := \
	./meta:FuzzValidatePath \
	./meta:FuzzDecodeCommand \
	./meta:FuzzSegmentCBOR \
	./meta:FuzzSnapRecordEncoding \
	./meta:FuzzCommandEncoding \
	./meta:FuzzCommandDecoding \
	./blob:FuzzParseDigest \
	./workbench:FuzzCanonicalManifest \
	./api/rest:FuzzRequest \
	./api/rest:FuzzListingWritesTheMapsEncoding \
	./workbench/auth:FuzzParseAuthorization \
	./workbench/auth:FuzzKeyLookup \
	./api/s3:FuzzChunkedReader \
	./api/s3:FuzzPartsLayout \
	./api/client:FuzzDecodeResultMatchesEncodingJSON \
	./api/mcp:FuzzStructuredContentEscapesAsMarshal \
	./api/mcp:FuzzResultEncoderMatchesEncodingJSON \
	./api/mcp:FuzzInboundMatchesTheOldChecks \
	./api/mcp:FuzzArgumentsDecodedOnceAsSeparately \
	./internal/strictjson:FuzzCheck

fuzz-smoke:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

## test-long: longer soaks than CI runs (more property-test cases, longer fuzzing, and the
## s3 integration tests at full size: a 2 GiB body through MinIO with the server's peak RSS
## bounded, chunk reuse after edits of a 1 GiB body; build tag long, THROUGHPUT/CHUNKS lines),
## 28 concurrent aggregates and catalogs on a 200k-file root under the query budget (QUERYMEM),
## failover time over 20 kills (FAILOVER line), the cluster linearizability check over
## ten rounds of ten faults (100: kill -9, SIGSTOP, splits, a bridge, etcd cuts; FAULT lines), and a soak: $CAIRN_SOAK_DURATION (default 30m) of mixed REST and
## MCP load with slow and abandoned clients, RSS and fd count sampled (SOAK lines).
test-long: minio
	$(GO) test -race -count=1 -timeout 120m ./meta -rapid.checks=20000
	bin=$$(GO=$(GO) scripts/minio.sh) && CAIRN_MINIO_BIN=$$bin $(GO) test -tags long -count=1 -timeout 60m -v -run '^(TestS3Long|TestClusterFailoverTime|TestQueryBudgetLong|TestIdleConnectionsLong)' ./integration
	bin=$$(GO=$(GO) scripts/minio.sh) && CAIRN_MINIO_BIN=$$bin CAIRN_LIN_ROUNDS=10 $(GO) test -count=1 -timeout 60m -v -run '^TestClusterLinearizableUnderKillsAndPartitions$$' ./integration
	bin=$$(GO=$(GO) scripts/minio.sh) && CAIRN_MINIO_BIN=$$bin CAIRN_SOAK_DURATION=$${CAIRN_SOAK_DURATION:-30m} $(GO) test -tags long -count=1 -timeout 60m -v -run '^TestSoak' ./integration
	$(MAKE) fuzz-smoke FUZZTIME=20000000x

## bench-micro: Go micro-benchmarks: FSM apply, metadata lookups, path codec and snapshot
## minting (meta), chunking, hashing and compression (blob), O(delta) append (workbench).
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem ./meta ./blob/... ./workbench

## bench-report: regenerate BENCHMARKS.md and bench/results/ from one run on this machine
## (about 12 minutes on 2 cores): MinIO, a 3-member etcd cluster and `cairn serve` nodes on
## loopback, a 2 GiB PUT+GET with the server's RSS, every `cairn bench` scenario with its
## baselines, a small-put sweep and a server CPU profile at the knee, server CPU profiles at
## 64 MiB put and get and 1 MiB put at 16 clients, then a 3-node `cairn serve --cluster` on the same etcd and MinIO
## with a short set of scenarios. BENCH_DURATION is the length of each phase.
BENCH_DURATION ?= 5s
bench-report: minio
	$(GO) build -tags pprof -o bin/cairn-pprof ./cmd/cairn
	bin=$$(GO=$(GO) scripts/minio.sh) && $(GO) run ./bench/cmd/bench-report -cairn bin/cairn-pprof -minio "$$bin" \
		-go $(GO) -duration $(BENCH_DURATION) -out bench/results -markdown BENCHMARKS.md

## console-screenshots: refresh the README's two screenshots of the web console
## (docs/console-*.png) from a run of its browser test (needs chromium, as .ci/run installs);
## the test saves one of each destination in its artifact directory, kept here by -artifacts.
console-screenshots:
	out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && \
	$(GO) test -count=1 -run '^TestConsoleInABrowser$$' -artifacts -outputdir "$$out" ./integration/ && \
	cp "$$(find "$$out" -name documents-stale-proposal.png)" docs/console-documents.png && \
	cp "$$(find "$$out" -name review-queue.png)" docs/console-review.png

run:
	$(GO) run ./cmd/cairn serve

clean:
	rm -rf bin
