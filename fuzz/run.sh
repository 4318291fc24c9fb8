#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan + UBSan) in build-fuzz/ and runs each for
# FUZZ_SECONDS (default 25) from the committed seed corpus in fuzz/corpus/<target>/. New inputs go
# to a scratch directory, not the corpus. A crash leaves crash-* in the build directory and fails; turn
# it into a regression test (tests/unit/test_fuzz_regressions.cpp) before fixing.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-25}
JOBS=${JOBS:-$(nproc)}
# FUZZ_BUILD: an existing fuzzer build to use (scripts/sanitize.sh passes its own).
BUILD=${FUZZ_BUILD:-build-fuzz}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DSERVESIM_BUILD_FUZZERS=ON -DSERVESIM_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD" -j "$JOBS" --target fuzz_scenario fuzz_hw fuzz_model fuzz_trace
for t in scenario hw model trace; do
  scratch=$(mktemp -d)
  echo "fuzz_$t: ${SECONDS_EACH}s"
  (cd "$BUILD" && ./fuzz/fuzz_$t -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
     -max_len=8192 -print_final_stats=1 "$scratch" "../fuzz/corpus/$t" 2>&1 | grep -E "stat::number_of_executed_units|ERROR|crash|Done" || true)
  rm -rf "$scratch"
  if ls "$BUILD"/crash-* "$BUILD"/timeout-* "$BUILD"/leak-* >/dev/null 2>&1; then
    echo "fuzz_$t found a failing input:" "$BUILD"/crash-* "$BUILD"/timeout-* "$BUILD"/leak-* 2>/dev/null
    exit 1
  fi
done
