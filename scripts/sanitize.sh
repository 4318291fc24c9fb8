#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer, then every libFuzzer harness
# for FUZZ_SECONDS each, from one clang build in build-san/ (tests and fuzzers share the
# instrumented library, so the sanitizers cost one build). -O1, as ASan recommends: at -O0 the
# suite ran over 30 minutes. Per-iteration allocator checks (SERVESIM_CHECK_INVARIANTS, O(KV
# blocks) each) stay off here: with them the golden run alone took minutes; the end-of-run
# invariants run in every build, and the Debug build checks every iteration.
# Needs clang and libclang-rt-14-dev (scripts/install-deps.sh --sanitizers installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SAN_BUILD:-build-san}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" \
  -DCMAKE_CXX_COMPILER=clang++ -DSERVESIM_BUILD_FUZZERS=ON -DSERVESIM_BUILD_TESTS=ON \
  -DSERVESIM_CHECK_INVARIANTS=OFF >/dev/null
cmake --build "$BUILD" -j "$JOBS"
# A sanitizer report aborts the test binary (-fno-sanitize-recover), which fails ctest.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
(cd "$BUILD" && ctest --output-on-failure -j "$JOBS")
FUZZ_BUILD="$BUILD" fuzz/run.sh
