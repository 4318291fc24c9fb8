#!/usr/bin/env bash
# Runs two servesim builds on the same scenario variants and checks that report.json (less the
# wall-clock fields) and requests.csv are byte-identical: the check behind "reports bit-identical"
# for a performance change. Usage: scripts/compare_builds.sh BASE_BIN [NEW_BIN] (NEW_BIN defaults
# to build/servesim). Build the base from an older commit, e.g.
#   git worktree add /tmp/base <commit> && cmake -S /tmp/base -B /tmp/base/build && cmake --build /tmp/base/build --target servesim
# Variants: every bundled scenario at 400 requests, then bench/million.json with swap and
# recompute preemption, timeouts, token-level, chunked prefill, static, dynamic, prefix caching
# and contiguous reservation; then prefix caching on (vLLM V1's default) for every bundled
# scenario and each of those policies and preemption modes, with sessions, with a prompt pool,
# on bench/vidur.json and under the vllm engine profile. Exit 1 if any differs.
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
run contiguous $S --set workload.num_requests=2000 --set engine.kv_reservation=contiguous --set engine.enable_prefix_caching=false --set workload.arrival.rate_per_s=40

# Prefix caching on. Small KV caches (gpu_memory_utilization) so that blocks are evicted and
# sequences preempted; sessions and prompt pools so that requests find each other's blocks.
PC="--set engine.enable_prefix_caching=true"
for f in scenarios/*.json; do run "$(basename "$f") +pc" "$f" --set workload.num_requests=400 $PC; done
SMALL="--set engine.gpu_memory_utilization=0.35"
run "swap +pc" $S --set workload.num_requests=3000 $SMALL --set engine.preemption_mode=swap --set workload.arrival.rate_per_s=60 $PC
run "recompute +pc" $S --set workload.num_requests=3000 $SMALL --set workload.arrival.rate_per_s=60 $PC
run "timeout +pc" $S --set workload.num_requests=3000 --set workload.request_timeout_s=20 --set workload.arrival.rate_per_s=40 $PC
for impl in token-level chunked-prefill static dynamic; do
  run "$impl +pc" $S --set workload.num_requests=1500 $SMALL --set "engine.scheduler={\"impl\":\"$impl\"}" --set workload.arrival.rate_per_s=40 $PC
done
run "sessions +pc" $S --set workload.num_requests=3000 $SMALL --set workload.arrival.rate_per_s=10 \
  --set 'workload.sessions={"turns":4,"think_time_s":1}' --set 'workload.shared_prefix={"num_prefixes":4,"prefix_tokens":300}' $PC
run "prompt pool +pc" $S --set workload.num_requests=3000 --set engine.gpu_memory_utilization=0.25 --set workload.arrival.rate_per_s=60 \
  --set 'workload.shared_prefix={"num_prefixes":4,"prefix_tokens":300,"prompts_per_prefix":8}' $PC
run "vidur +pc" bench/vidur.json --set workload.num_requests=3000 $PC
run "default, vllm profile" scenarios/default.json --set workload.num_requests=2000 --set engine.profile=vllm
# A fleet: 64 replicas behind each router (the per-replica state grows lazily, routers skip loads).
# In time windows (serve/fleet_lanes.hpp): equal-time arrivals (all at once, constant gaps), full
# queues, timeouts, preemption, batching windows (wake-ups), async scheduling, prefix caching.
F="scenarios/default.json --set parallel.data_parallel_size=64 --set workload.arrival.rate_per_s=640"
for router in round_robin least_outstanding least_kv prefix_affinity; do
  R="--set router.impl=$router"
  run "fleet of 64, $router" $F --set workload.num_requests=3000 $R
  run "fleet of 8 all at once, $router" $F --set parallel.data_parallel_size=8 --set workload.num_requests=600 \
    --set 'workload.arrival={"impl":"all_at_once"}' --set engine.scheduler.max_queue_size=40 $R
  run "fleet of 16 constant, $router" $F --set parallel.data_parallel_size=16 --set workload.num_requests=2000 \
    --set 'workload.arrival={"impl":"constant","rate_per_s":400}' --set engine.gpu_memory_utilization=0.3 $R
  run "fleet of 32 timeouts, $router" $F --set parallel.data_parallel_size=32 --set workload.num_requests=3000 \
    --set workload.request_timeout_s=5 --set engine.scheduler.max_waiting_time_s=2 --set workload.arrival.rate_per_s=900 $R
  run "fleet of 16 dynamic, $router" $F --set parallel.data_parallel_size=16 --set workload.num_requests=1500 \
    --set 'engine.scheduler={"impl":"dynamic"}' $R
  run "fleet of 16 vllm +pc, $router" $F --set parallel.data_parallel_size=16 --set workload.num_requests=2000 --set engine.profile=vllm \
    --set 'workload.shared_prefix={"num_prefixes":8,"prefix_tokens":300}' $PC $R
done
exit $fail
