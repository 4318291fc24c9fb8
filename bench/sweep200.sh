#!/usr/bin/env bash
# A sweep of 200 scenarios on 1 thread and on 2: prints both wall times and the speed-up.
# Runs bench/sweep_bench.cpp: TBB parallel_for over 200 independent simulations (variants of
# bench/million.json), thread count fixed by tbb::global_control. `servesim sweep` runs a user's sweep file on all
# cores the same way (`--serial` for one); this bench keeps the scenario set fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BENCH=$BUILD/bench/servesim_sweep_bench
REQUESTS=${REQUESTS:-2000}
[ -x "$BENCH" ] || { echo "sweep200: build first (make build)" >&2; exit 2; }
one=$("$BENCH" bench/million.json 1 200 "$REQUESTS")
two=$("$BENCH" bench/million.json 2 200 "$REQUESTS")
echo "$one"
echo "$two"
python3 - "$one" "$two" <<'PY'
import sys
f = lambda line: dict(zip(line.split()[::2], line.split()[1::2]))
a, b = f(sys.argv[1]), f(sys.argv[2])
assert a["checksum"] == b["checksum"], "results differ between thread counts"
print(f"speed-up 2 threads vs 1: {float(a['wall_s']) / float(b['wall_s']):.2f}x")
PY
