# The README's two commands: `make demo` and `make test`.
# Both install missing system packages, configure and build first.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BLKC := build/blkc

.PHONY: all setup build build-asan demo test test-fast bench clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset default >/dev/null
	@cmake --build --preset default -j $(JOBS)

build-asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

# Runs the showcase on the best device present (CPU otherwise).
demo: build
	@bash examples/demo.sh $(BLKC)

# The whole suite, then again under ASan+UBSan.
test: build build-asan
	@cd build && ctest --output-on-failure -j $(JOBS) --timeout 300
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) --timeout 600 -LE 'fuzz|bench'

test-fast: build
	@cd build && ctest --output-on-failure -j $(JOBS)

bench: build
	@bash benchmarks/run.sh

clean:
	rm -rf build build-asan build-tsan
