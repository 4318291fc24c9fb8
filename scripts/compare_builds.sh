#!/usr/bin/env bash
# Runs two servesim builds on the same scenario variants and checks that report.json (less the
# wall-clock fields) and requests.csv are byte-identical: the check behind "reports bit-identical"
# for a performance change. Usage: scripts/compare_builds.sh BASE_BIN [NEW_BIN] (NEW_BIN defaults
# to build/servesim). Build the base from an older commit, e.g.
#   git worktree add /tmp/base <commit> && cmake -S /tmp/base -B /tmp/base/build && cmake --build /tmp/base/build --target servesim
# Variants: every bundled scenario at 400 requests, then bench/million.json with swap and
# recompute preemption, timeouts, token-level, chunked prefill, static, dynamic, prefix caching
# and contiguous reservation. Exit 1 if any differs.
set -uo pipefail
cd "$(dirname "$0")/.."
BASE=${1:?usage: scripts/compare_builds.sh BASE_BIN [NEW_BIN]}
NEW=${2:-build/servesim}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

run() {  # name, then servesim run arguments
  local name=$1; shift
  "$BASE" run "$@" --quiet --no-html --out "$work/a" >/dev/null 2>"$work/err_a"; local ra=$?
  "$NEW" run "$@" --quiet --no-html --out "$work/b" >/dev/null 2>"$work/err_b"; local rb=$?
  if [ "$ra" != "$rb" ]; then echo "$name: exit $ra vs $rb"; fail=1; return; fi
  if [ "$ra" != 0 ]; then echo "$name: both exit $ra: $(head -c 150 "$work/err_a")"; return; fi
  if ! python3 - "$work/a/report.json" "$work/b/report.json" <<'PY'
import json, sys
a, b = [json.load(open(f)) for f in sys.argv[1:3]]
for r in (a, b):
    for k in ("wall_s", "events_per_s", "sim_s_per_wall_s"):
        r.get("sim", {}).pop(k, None)
sys.exit(0 if a == b else 1)
PY
  then echo "$name: report.json differs"; fail=1; return; fi
  if ! cmp -s "$work/a/requests.csv" "$work/b/requests.csv"; then echo "$name: requests.csv differs"; fail=1; return; fi
  echo "$name: identical"
}

for f in scenarios/*.json; do run "$(basename "$f")" "$f" --set workload.num_requests=400; done
S=bench/million.json
run swap $S --set workload.num_requests=3000 --set engine.gpu_memory_utilization=0.35 --set engine.preemption_mode=swap --set workload.arrival.rate_per_s=60
run recompute $S --set workload.num_requests=3000 --set engine.gpu_memory_utilization=0.35 --set workload.arrival.rate_per_s=60
run timeout $S --set workload.num_requests=3000 --set workload.request_timeout_s=20 --set workload.arrival.rate_per_s=40
run token_level $S --set workload.num_requests=2000 --set 'engine.scheduler={"impl":"token-level"}' --set workload.arrival.rate_per_s=40
run chunked $S --set workload.num_requests=2000 --set 'engine.scheduler={"impl":"chunked-prefill"}' --set workload.arrival.rate_per_s=40
run static $S --set workload.num_requests=1000 --set 'engine.scheduler={"impl":"static"}'
run dynamic $S --set workload.num_requests=1000 --set 'engine.scheduler={"impl":"dynamic"}'
run prefix $S --set workload.num_requests=2000 --set engine.enable_prefix_caching=true --set engine.gpu_memory_utilization=0.4 --set workload.arrival.rate_per_s=60
run contiguous $S --set workload.num_requests=2000 --set engine.kv_reservation=contiguous --set workload.arrival.rate_per_s=40
exit $fail
