#!/usr/bin/env bash
# A fleet advanced in time windows on several threads (`servesim run --sim-threads N`, issue 39)
# writes exactly what one thread writes: report.json (less its wall-clock fields), requests.csv
# and trace.json, compared byte for byte, on a 64-replica fleet behind each router and on every
# bundled scenario (the ones with one replica or disaggregated pools run the one-queue loop).
# Then round robin's batches of windows: without an observer (no requests.csv or trace) the
# event loop routes several windows before the lanes run them (FleetLanes::advance), with one
# every window runs alone; report.json must be the same, on one thread and on two.
#   threads_same_output.sh SERVESIM
set -u
SERVESIM=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
status=0

# same NAME ARGS...: --sim-threads 1 into one/, 2 and 4 into two/ and four/, then every file compared.
same() {
  local name=$1 n
  shift
  for n in 1 2 4; do
    "$SERVESIM" run "$@" --quiet --no-html --sim-threads "$n" --out "$WORK/$name/$n" >/dev/null 2>"$WORK/err" ||
      { echo "FAIL [$name]: --sim-threads $n exited $?: $(head -c 300 "$WORK/err")"; status=1; return; }
    sed -E 's/"(wall_s|events_per_s|sim_s_per_wall_s)": [0-9.e+-]+/"\1": 0/' "$WORK/$name/$n/report.json" >"$WORK/$name/$n/report.cmp"
    rm "$WORK/$name/$n/report.json"
  done
  for n in 2 4; do
    for f in "$WORK/$name/1"/*; do
      if cmp -s "$f" "$WORK/$name/$n/${f##*/}"; then
        echo "ok   [$name] ${f##*/} identical with $n threads ($(wc -c <"$f") bytes)"
      else
        echo "FAIL [$name] ${f##*/} differs with $n threads"; status=1
      fi
    done
  done
}

fleet="$ROOT/scenarios/default.json --set parallel.data_parallel_size=64 --set workload.arrival.rate_per_s=640"
for router in round_robin least_outstanding least_kv prefix_affinity; do
  # shellcheck disable=SC2086
  same "fleet64-$router" $fleet --set workload.num_requests=2000 --set "router.impl=$router"
done
# shellcheck disable=SC2086
same "fleet16-all-at-once" $fleet --set parallel.data_parallel_size=16 --set workload.num_requests=500 \
  --set 'workload.arrival={"impl":"all_at_once"}' --set engine.scheduler.max_queue_size=20
for f in "$ROOT"/scenarios/*.json; do
  same "$(basename "$f" .json)" "$f" --set workload.num_requests=300
done

# batched NAME ARGS...: with requests.csv and trace.json (windows one at a time) into w/, without
# them (batches) on 1 and 2 threads into b1/ and b2/; report.json compared.
batched() {
  local name=$1 dir
  shift
  "$SERVESIM" run "$@" --quiet --no-html --out "$WORK/$name/w" >/dev/null 2>"$WORK/err" &&
    "$SERVESIM" run "$@" --quiet --no-html --no-csv --no-trace --out "$WORK/$name/b1" >/dev/null 2>>"$WORK/err" &&
    "$SERVESIM" run "$@" --quiet --no-html --no-csv --no-trace --sim-threads 2 --out "$WORK/$name/b2" >/dev/null 2>>"$WORK/err" ||
    { echo "FAIL [$name]: exited $?: $(head -c 300 "$WORK/err")"; status=1; return; }
  for dir in w b1 b2; do
    sed -E 's/"(wall_s|events_per_s|sim_s_per_wall_s)": [0-9.e+-]+/"\1": 0/' "$WORK/$name/$dir/report.json" >"$WORK/$name/$dir.cmp"
  done
  for dir in b1 b2; do
    if cmp -s "$WORK/$name/w.cmp" "$WORK/$name/$dir.cmp"; then
      echo "ok   [$name] report.json identical in batches, $dir ($(wc -c <"$WORK/$name/w.cmp") bytes)"
    else
      echo "FAIL [$name] report.json differs in batches, $dir"; status=1
    fi
  done
}

# Several batches; arrivals all at once (every window's bound at t = 0); constant gaps; timeouts;
# dynamic batching's wake-ups (the case that catches a lane taking a later window's arrival at a
# bound).
rr="$ROOT/scenarios/default.json --set router.impl=round_robin"
# shellcheck disable=SC2086
{
  batched "rr64" $rr --set parallel.data_parallel_size=64 --set workload.arrival.rate_per_s=640 --set workload.num_requests=20000
  batched "rr512" $rr --set parallel.data_parallel_size=512 --set workload.arrival.rate_per_s=5120 --set workload.num_requests=40000
  batched "rr8-all-at-once" $rr --set parallel.data_parallel_size=8 --set workload.num_requests=3000 \
    --set 'workload.arrival={"impl":"all_at_once"}' --set engine.scheduler.max_queue_size=40
  batched "rr16-constant" $rr --set parallel.data_parallel_size=16 --set workload.num_requests=10000 \
    --set 'workload.arrival={"impl":"constant","rate_per_s":160}' --set engine.gpu_memory_utilization=0.3
  batched "rr32-timeouts" $rr --set parallel.data_parallel_size=32 --set workload.num_requests=10000 \
    --set workload.request_timeout_s=5 --set engine.scheduler.max_waiting_time_s=2 --set workload.arrival.rate_per_s=900
  batched "rr16-dynamic" $rr --set parallel.data_parallel_size=16 --set workload.num_requests=6000 \
    --set 'engine.scheduler={"impl":"dynamic"}'
}
exit $status
