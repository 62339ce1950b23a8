# The README's two commands: `make demo` and `make test`.
# Both install missing system packages, configure and build first.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BLKC := build/blkc

.PHONY: all setup build build-asan build-tsan demo test test-tsan test-fast bench clean fresh-check gpu-prep gpu-dry-run

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset default >/dev/null
	@cmake --build --preset default -j $(JOBS)

build-asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

# ThreadSanitizer: only the runtime and threading tests — every test labelled
# dist (the multi-rank runtime and device tier) plus the threaded API, launch
# and thread-pool tests below — and only the targets they need, not the tree.
# gpu_ranks_fake_hip(_timed) is left out (30-55 s): its host side is
# gpu_ranks_fake's code behind the vendor's table, which runs here.
TSAN_THREAD_TESTS := api_threads api_spec_bg exec_t_concurrent_launch rt_unit cache_threads cache_inflight
build-tsan: setup
	@cmake --preset tsan >/dev/null
	@cd build-tsan && have=$$(cmake --build . --target help | sed -n 's/^\([A-Za-z0-9_]*\): .*/\1/p') && \
	  want="blkc_cli task_ref blkc_npytool gpu_fake_cuda gpu_fake_hip gpu_fake_nccl gpu_fake_nccl_old gpu_npycmp $(TSAN_THREAD_TESTS) $$(ctest -N -L dist | sed -n 's/^ *Test *#[0-9]*: *//p')" && \
	  tgts=$$(for t in $$want; do echo "$$have" | grep -qx "$$t" && echo $$t || true; done) && \
	  cmake --build . -j $(JOBS) --target $$tgts

test-tsan: build-tsan
	@cd build-tsan && export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" && \
	  ctest --output-on-failure -j $(JOBS) --timeout 600 -L dist -E '^gpu_ranks_fake_hip(_timed)?$$' && \
	  ctest --output-on-failure -j $(JOBS) --timeout 600 \
	    -R '^($(subst $(eval) ,|,$(strip $(TSAN_THREAD_TESTS))))$$'

# Runs the showcase on the best device present (CPU otherwise).
demo: build
	@bash examples/demo.sh $(BLKC)

# The whole suite (with the 15 s fuzz smoke run, label fuzz), then again
# under ASan+UBSan, then the runtime and threading tests under TSan.
# ASan leaves out fuzz, bench, emu_exec (the tests/exec programs rerun on
# the emulated devices: the emulator's own tests, label emu, stay in), the
# 4-process mpirun tests mpi_*_np4 (serial, 3.5 min under ASan; their np2
# twins run the same code there), and the tests that compile every
# program with NVRTC + ptxas or hipcc (~4 min under ASan, nearly all of it
# in those uninstrumented compilers; the CUDA / HIP C emitters they drive
# run under ASan in the emu, golden and gpuir tests), and the emulator's
# unit programs (emu_wrappers-*, tma, wgrace, cprace, ws, wgf8, wgrs: C++ built
# with the host compiler, no blkc code, the same run in both builds), and
# emu_paths (44 s under ASan, nearly all of it the host compiler and the
# emulated kernels, which are not instrumented: the old code paths kept
# for comparison, BLKC_GPU_NOPIPE / NOHOIST / NOVEC / SMEM ...; the
# default paths' emitters run under ASan in emu_exec-*, emu_layouts and
# emu_lib-*), and gpu_ranks_fake_hip_timed (49 s alone on the machine
# under ASan: the timed cases over the fake HIP driver, whose host side is
# gpu_ranks_fake_timed's code behind the vendor's table, which runs here,
# as TSan leaves it out; gpu_ranks_fake_hip's cases stay); all of them run
# in the default build. Test runs use one private JIT cache (never the
# user's ~/.cache/blkc), shared by the tests: reruns of a program link
# its cached code.
export BLKC_CACHE_DIR ?= $(CURDIR)/build/test-cache
ASAN_SKIP := ^(mpi_.*_np4|nvrtc_(blk|compile|examples|examples_spec|tma|wgmma)|hip_(blk|compile|examples_spec)|emu_(wrappers-cuda|wrappers-hip|tma|wgrace|cprace|ws|wgf8|wgrs|paths)|gpu_ranks_fake_hip_timed)$$

test: build build-asan
	@cd build && ctest --output-on-failure -j $(JOBS) --timeout 300
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) --timeout 600 -LE 'fuzz|bench|emu_exec' -E '$(ASAN_SKIP)'
	@$(MAKE) --no-print-directory test-tsan

test-fast: build
	@cd build && ctest --output-on-failure -j $(JOBS)

bench: build
	@bash benchmarks/run.sh

clean:
	rm -rf build build-asan build-tsan

# A fresh Debian 12 root (debootstrap, cached under build/fresh/) clones the
# committed HEAD and runs `make demo` and `make test` there, as a new user
# would; one result line (scripts/fresh-check.sh). FRESH_CHECK_QUICK=1:
# `make demo` and `make test-fast` only.
fresh-check:
	@bash scripts/fresh-check.sh

# The GPU build (preset gpu, no LLVM/flex/bison; docs/gpu.md): gpu-prep
# writes build-gpu-prep/ (generated lexer/parser, the GPU tests' CPU
# references) to carry to the GPU machine; gpu-dry-run runs
# benchmarks/gpu_check.sh as that machine will, in a root without LLVM,
# flex and bison (scripts/gpu-dry-run.sh).
gpu-prep: build
	@bash scripts/gpu-prep.sh

gpu-dry-run: gpu-prep
	@bash scripts/gpu-dry-run.sh
