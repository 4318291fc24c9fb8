#!/usr/bin/env bash
# Vidur's published scenario side by side: Llama-2-70B, TP2 on A100 80GB SXM, vLLM scheduler
# (128 sequences, 4096 batched tokens, block 16), 100,000 requests of 1024 prompt / 256 output
# tokens, Poisson 1 req/s (bench/vidur.json). Times `servesim run` pinned to one core with the
# outputs off (and once more with requests.csv on): wall time, CPU time (user + sys) and peak RSS,
# medians of RUNS.
# Usage: bench/vidur_side_by_side.sh [REQUESTS.csv]
#   REQUESTS.csv: the request list vidur simulated (its trace format: arrived_at,
#   num_prefill_tokens,num_decode_tokens), replayed as is; without it the generator draws the
#   same distribution (up to workload.num_requests rows, 100,000). RUNS (default 5), BENCH_CPU (default 0), SERVESIM (default build/servesim),
#   EXTRA="--no-fast-forward" to time the per-event loop. The last two lines time the run with
#   cost_model.interpolate_decode on (decode-only steps interpolated between exact prices).
# For reference, vidur itself took 171 s and 1.45 GB on this scenario (measured on the
# project's 2-core development host).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SERVESIM:-build/servesim}
CPU=${BENCH_CPU:-0}
RUNS=${RUNS:-5}
[ -x "$BIN" ] || { echo "bench: build first (make build)" >&2; exit 2; }
workload=()
if [ $# -ge 1 ]; then
  [ -r "$1" ] || { echo "bench: $1: cannot read the request list" >&2; exit 2; }
  workload=(--set "workload.trace={\"path\":\"$(realpath "$1")\",\"format\":\"splitwise\"}"
            --set 'workload.arrival={"impl":"trace"}'
            --set 'workload.prompt_tokens={"impl":"trace"}' --set 'workload.output_tokens={"impl":"trace"}')
  echo "request list: $1"
else
  echo "request list: generated (Poisson 1 req/s, 1024 in / 256 out, seed 1)"
fi
echo "host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (a shared host: wall times vary with load)"
time_runs() {  # label, extra run flags...
  local label=$1
  shift
  local walls=() rss=() cpus=()
  for ((run = 0; run < RUNS; run++)); do
    out=$(mktemp -d)
    # Wall time from the clock's nanoseconds around the run (GNU time's elapsed has 10 ms steps,
    # as coarse as the margin to the 0.17 s target); GNU time still gives peak RSS and CPU time.
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$out/time.txt" taskset -c "$CPU" "$BIN" run bench/vidur.json --quiet --out "$out" \
      --no-html --no-trace ${EXTRA:-} "${workload[@]}" "$@"
    t1=$(date +%s%N)
    walls+=("$(awk -v ns=$((t1 - t0)) 'BEGIN {printf "%.4f", ns / 1e9}')")
    rss+=("$(sed -nE 's/.*Maximum resident set size \(kbytes\): ([0-9]+)/\1/p' "$out/time.txt")")
    # user + sys: what the run cost its core (on a loaded host wall time also counts waiting for it)
    cpus+=("$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/ {s += $2} END {print s}' "$out/time.txt")")
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['requests']['completed'] > 0" "$out/report.json"
    rm -rf "$out"
  done
  local cpu_median
  cpu_median=$(printf '%s\n' "${cpus[@]}" | sort -g | awk '{c[NR] = $1} END {printf "%.3f", NR % 2 ? c[(NR + 1) / 2] : (c[NR / 2] + c[NR / 2 + 1]) / 2}')
  printf '%s\n' "${walls[@]}" | sort -g | awk -v label="$label" -v cpu="$cpu_median" -v rss="$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)" \
    '{w[NR] = $1} END {printf "%-22s median_wall_s %.4f  min_wall_s %.4f  median_cpu_s %s  peak_rss_MB %.1f  runs %d\n", label,
      (NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2), w[1], cpu, rss / 1024, NR}'
}
time_runs "outputs off" --no-csv
time_runs "requests.csv on"
# The same with decode-only steps interpolated between exact prices (cost_model.interpolate_decode:
# a step within 2e-4 of its exact price, tests/unit/test_interpolated_decode.cpp).
time_runs "interp., outputs off" --no-csv --set cost_model.interpolate_decode=true
time_runs "interp., requests.csv" --set cost_model.interpolate_decode=true
