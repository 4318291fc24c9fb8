#!/usr/bin/env bash
# Instructions executed by `servesim run bench/million.json` (valgrind --tool=callgrind): steadier
# than wall time on a shared host. Usage: bench/instructions.sh [NUM_REQUESTS] (default 20000);
# SERVESIM=path/to/servesim compares another build. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SERVESIM:-build/servesim}
N=${1:-20000}
command -v valgrind >/dev/null || { echo "instructions: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
out=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$BIN" run bench/million.json --quiet --no-work-limit --out "$out" \
  --set workload.num_requests="$N" 2>&1 | sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d , |
  awk -v n="$N" '{printf "requests %d instructions %d\n", n, $1}'
rm -rf "$out"
