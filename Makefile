# Cairn build and test entry points. `make test` is what CI (.ci/run) and the README run.
GO       ?= go
FUZZTIME ?= 10s
PKGS     := ./...

.PHONY: all build test vet unit fuzz-smoke test-long bench-micro run clean

all: build

build:
	$(GO) build -o bin/cairn ./cmd/cairn

## test: everything CI checks — formatting, vet, the race-enabled test suite (unit,
## property, conformance and integration tests with real processes), and a short run of
## every fuzz target.
test: vet unit fuzz-smoke

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 -timeout 40m $(PKGS)

# One target per invocation: go test -fuzz accepts a single target.
FUZZ_TARGETS := \
	./meta:FuzzValidatePath \
	./meta:FuzzDecodeCommand \
	./blob:FuzzParseDigest \
	./api/rest:FuzzRequest

fuzz-smoke:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

## test-long: longer soaks than CI runs (more property-test cases, longer fuzzing).
test-long:
	$(GO) test -race -count=1 -timeout 120m ./meta -rapid.checks=20000
	$(MAKE) fuzz-smoke FUZZTIME=5m

## bench-micro: Go micro-benchmarks (FSM apply, metadata lookups, path codec, chunking).
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem ./meta ./blob/...

run:
	$(GO) run ./cmd/cairn serve

clean:
	rm -rf bin
