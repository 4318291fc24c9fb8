#!/usr/bin/env bash
# Times `servesim plan` (issue 35 item 7's targets): the README's example pinned to one core
# (<= 1 s wall on one core) and --hw all over 4 TP sizes and 2 quantizations (<= 3 s wall), the
# latter both pinned to one core (case all) and on every core of the machine (case all_cores:
# plan runs its options in parallel with TBB), RUNS times each (default 5), with each run's wall
# and CPU seconds, then the median. Each case's answer (the
# chosen row and every option's stable rate) is written to $OUT/NAME.json, so two builds'
# answers can be compared: bench/plan_compare.py OLD/NAME.json NEW/NAME.json. The commands run as a
# user types them, without --no-work-limit: the work estimate must let them run.
# Usage: bench/plan.sh [OUT_DIR]   (SERVESIM=path/to/servesim, BENCH_CPU=0, RUNS=5; BENCH_CPUS_ALL,
# default every core 0..nproc-1, for case all_cores)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SERVESIM:-build/servesim}
CPU=${BENCH_CPU:-0}
CPUS_ALL=${BENCH_CPUS_ALL:-0-$(($(nproc) - 1))}
RUNS=${RUNS:-5}
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "bench: build first (make build)" >&2; exit 2; }
readme=(plan --model llama-2-70b --rate 5 --slo ttft=2s,tpot=100ms --hw a100-80gb-sxm,h100-sxm)
all=(plan --model llama-2-70b --rate 5 --slo ttft=2s,tpot=100ms --hw all --tp 1,2,4,8 --quant bf16,fp8)
all_cores=("${all[@]}")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (wall counts waiting for the core; cpu_s does not)"
printf "%-8s %4s %8s %7s\n" case run wall_s cpu_s
for name in readme all all_cores; do
  pin=$CPU
  [ "$name" = all_cores ] && pin=$CPUS_ALL
  declare -n cmd=$name
  walls=() cpus=()
  for ((run = 0; run < RUNS; run++)); do
    t=$(mktemp)
    /usr/bin/time -f "%e %U %S" -o "$t" taskset -c "$pin" "$BIN" "${cmd[@]}" --json >"$OUT/$name.json" 2>/dev/null
    read -r wall user sys <"$t"
    rm -f "$t"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
    printf "%-8s %4d %8.2f %7.2f\n" "$name" "$run" "$wall" "$cpu"
    walls+=("$wall") cpus+=("$cpu")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
  printf "%-8s median_wall_s %.2f median_cpu_s %.2f runs %d  (servesim %s)\n" "$name" "$(median "${walls[@]}")" "$(median "${cpus[@]}")" "$RUNS" "${cmd[*]}"
done
echo "answers: $OUT/readme.json $OUT/all.json $OUT/all_cores.json"
