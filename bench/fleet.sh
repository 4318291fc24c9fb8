#!/usr/bin/env bash
# Fleet scale (issue 39): servesim run of scenarios/default.json (Llama-3-8B on H100, the default
# engine) over R replicas at 10 req/s per replica, outputs off (report.json only). Each case runs
# in time windows (serve/fleet_lanes.hpp) on one thread pinned to one core, and where it says so
# with `--sim-threads 2` on two cores, or on the one-queue loop (`--no-windows`) for comparison.
# Prints wall s, CPU s (user + sys), peak RSS and CPU microseconds per request, the median of RUNS:
#   2,048 replicas x 1,000 requests (target <= 0.3 s, <= 200 MB);
#   8 and 512 replicas with the same total requests, REQUESTS (target: 512 within 1.5x of 8 per request);
#   1,000 replicas at 10,000 req/s, BIG requests (the issue's 10,000,000: <= 60 s on one core,
#   <= 35 s on two with round robin), behind round_robin, least_outstanding and least_kv.
# The issue's 10M case is BIG=10000000 (measured once on main c81070d, docs/scale.md session 15:
# round robin one core 144.6 s wall / 101.5 s CPU / 1,080 MB at load 4.2-4.8; two threads 178.1 s
# wall / 117.0 s CPU at load 4.1-5.8, the second core busy with other work; 1M: 8.19 s CPU, 1,021 MB).
# Usage: bench/fleet.sh  (RUNS default 1, SERVESIM default build/servesim, CPU default 0 for one
#        core, CPUS default 0,1 for two, REQUESTS default 512000, BIG default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SERVESIM:-build/servesim}
CPU=${CPU:-0}
CPUS=${CPUS:-0,1}
RUNS=${RUNS:-1}
N=${REQUESTS:-512000}
BIG=${BIG:-1000000}
[ -x "$BIN" ] || { echo "bench: build first (make build)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# measure CPUS REPLICAS REQUESTS [servesim flags...]: "wall cpu rss_kb", the median of RUNS runs.
measure() {
  local cpus=$1 replicas=$2 requests=$3 i
  shift 3
  for ((i = 0; i < RUNS; i++)); do
    /usr/bin/time -f "%e %U %S %M" -o "$out/t" taskset -c "$cpus" "$BIN" run scenarios/default.json -q -o "$out/run" \
      --no-html --no-csv --no-trace --no-work-limit --set "parallel.data_parallel_size=$replicas" \
      --set "workload.num_requests=$requests" --set "workload.arrival.rate_per_s=$((replicas * 10))" "$@" >/dev/null
    awk '{printf "%s %.3f %s\n", $1, $2 + $3, $4}' "$out/t"
  done | sort -n | awk -v r="$RUNS" 'NR == int((r + 1) / 2) {print}'
}

printf "%-44s %8s %8s %9s %8s\n" "case" "wall s" "cpu s" "peak MB" "us/req"
# row LABEL CPUS REPLICAS REQUESTS [flags...]
row() {
  local label=$1 cpus=$2 replicas=$3 requests=$4
  shift 4
  read -r wall cpu rss < <(measure "$cpus" "$replicas" "$requests" "$@")
  printf "%-44s %8s %8s %9.1f %8.2f\n" "$label" "$wall" "$cpu" "$(echo "$rss / 1024" | bc -l)" \
    "$(echo "$cpu * 1000000 / $requests" | bc -l)"
  echo "$cpu" >"$out/cpu_$replicas"
}
row "2048 x 1000, queue (--no-windows)" "$CPU" 2048 1000 --no-windows
row "2048 x 1000, windows" "$CPU" 2048 1000
row "8 x $N, windows" "$CPU" 8 "$N"
row "512 x $N, queue (--no-windows)" "$CPU" 512 "$N" --no-windows
row "512 x $N, windows" "$CPU" 512 "$N"
echo "time per request, 512 vs 8 replicas (windows): $(echo "$(cat "$out/cpu_512") / $(cat "$out/cpu_8")" | bc -l | cut -c1-5)x (target <= 1.5x)"
row "512 x $N, windows, 2 threads" "$CPUS" 512 "$N" --sim-threads 2
for router in round_robin least_outstanding least_kv; do
  row "1000 x $BIG $router" "$CPU" 1000 "$BIG" --set "router.impl=$router"
  row "1000 x $BIG $router, 2 threads" "$CPUS" 1000 "$BIG" --set "router.impl=$router" --sim-threads 2
done
