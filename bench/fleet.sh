#!/usr/bin/env bash
# Fleet scale (issue 39): servesim run of scenarios/default.json (Llama-3-8B on H100, the default
# engine, round-robin router) over R replicas at 10 req/s per replica, outputs off (report.json
# only), pinned to one core. Prints wall seconds, CPU seconds and peak RSS, the median of RUNS,
# for: 2,048 replicas x 1,000 requests (target <= 0.3 s, <= 200 MB), and the time per request at
# 8 and 512 replicas with the same total requests (target: 512 within 1.5x of 8).
# Usage: bench/fleet.sh  (RUNS default 3, BENCH_CPU default 0, SERVESIM default build/servesim,
#        REQUESTS default 20000 for the per-request pair)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SERVESIM:-build/servesim}
CPU=${BENCH_CPU:-0}
RUNS=${RUNS:-3}
N=${REQUESTS:-20000}
[ -x "$BIN" ] || { echo "bench: build first (make build)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One configuration RUNS times: "wall cpu rss_kb" medians.
measure() {
  local replicas=$1 requests=$2 i
  for ((i = 0; i < RUNS; i++)); do
    /usr/bin/time -f "%e %U %S %M" -o "$out/t" taskset -c "$CPU" "$BIN" run scenarios/default.json -q -o "$out/run" \
      --no-html --no-csv --no-trace --set "parallel.data_parallel_size=$replicas" \
      --set "workload.num_requests=$requests" --set "workload.arrival.rate_per_s=$((replicas * 10))" >/dev/null
    awk '{printf "%s %.3f %s\n", $1, $2 + $3, $4}' "$out/t"
  done | sort -n | awk -v r="$RUNS" 'NR == int((r + 1) / 2) {print}'
}

printf "%-34s %8s %8s %10s\n" "case" "wall s" "cpu s" "peak MB"
row() {
  local label=$1 replicas=$2 requests=$3
  read -r wall cpu rss < <(measure "$replicas" "$requests")
  printf "%-34s %8s %8s %10.1f\n" "$label" "$wall" "$cpu" "$(echo "$rss / 1024" | bc -l)"
  echo "$cpu" > "$out/cpu_$replicas"
}
row "2048 replicas, 1000 requests" 2048 1000
row "8 replicas, $N requests" 8 "$N"
row "512 replicas, $N requests" 512 "$N"
echo "time per request, 512 vs 8 replicas: $(echo "$(cat "$out/cpu_512") / $(cat "$out/cpu_8")" | bc -l | cut -c1-5)x (target <= 1.5x)"
