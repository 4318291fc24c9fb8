#!/usr/bin/env bash
# Times `servesim run` on bench/million.json pinned to one core: wall time, peak RSS, events/s and
# simulated seconds per wall second. Usage: bench/million.sh [NUM_REQUESTS ...] (default 1000000).
# `make bench` runs 1M and 10M; peak RSS that stays flat from 1M to 10M shows memory does not
# grow with the request count (the runs pass --no-work-limit: 10M requests are past the default
# budget on purpose). ARRIVAL=all_at_once bench/million.sh 1000000 puts every request at t = 0.
# INTERPOLATE_DECODE=1 prices decode-only steps by interpolation (cost_model.interpolate_decode).
# RUNS=5 repeats each size and ends with the min and median wall time (the host this project is
# measured on is shared: single runs of one binary vary by up to 1.5x).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SERVESIM:-build/servesim}
CPU=${BENCH_CPU:-0}
RUNS=${RUNS:-1}
[ -x "$BIN" ] || { echo "bench: build first (make build)" >&2; exit 2; }
[ $# -eq 0 ] && set -- 1000000
# cpu_s (user + sys) is what the run cost its core; on a loaded machine wall_s also counts waiting
# for the core, so the rates are given per CPU second.
printf "%-10s %8s %7s %9s %10s %16s %18s\n" requests wall_s cpu_s peak_MB events events_per_cpu_s sim_s_per_cpu_s
for n in "$@"; do
  walls=()
  for ((run = 0; run < RUNS; run++)); do
    out=$(mktemp -d)
    # GNU time -v reports "Maximum resident set size (kbytes)"; taskset keeps it on one core.
    /usr/bin/time -v -o "$out/time.txt" taskset -c "$CPU" "$BIN" run bench/million.json --quiet --no-work-limit --out "$out" \
      --set workload.num_requests="$n" ${ARRIVAL:+--set "workload.arrival={\"impl\":\"$ARRIVAL\"}"} \
      ${INTERPOLATE_DECODE:+--set cost_model.interpolate_decode=true}
    row=$(python3 - "$out" "$n" <<'PY'
import json, re, sys
out, n = sys.argv[1], int(sys.argv[2])
t = open(out + "/time.txt").read()
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", t)
wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
cpu = sum(float(re.search(p + r" time \(seconds\): ([\d.]+)", t).group(1)) for p in ("User", "System"))
r = json.load(open(out + "/report.json"))
ev, sim_s = r["sim"]["events"], r["sim"]["simulated_s"]
assert r["requests"]["completed"] + r["requests"]["rejected"] == n
print(f"{n:<10d} {wall:8.2f} {cpu:7.2f} {rss_kb/1024:9.1f} {ev:10d} {ev/cpu:16.3e} {sim_s/cpu:18.1f}")
PY
)
    echo "$row"
    walls+=("$(awk '{print $2}' <<<"$row")")
    rm -rf "$out"
  done
  if [ "$RUNS" -gt 1 ]; then
    printf '%s\n' "${walls[@]}" | sort -g | awk -v n="$n" '{w[NR] = $1}
      END {printf "%-10d min_wall_s %.2f median_wall_s %.2f runs %d\n", n, w[1], (NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2), NR}'
  fi
done
