#!/usr/bin/env bash
# A fleet advanced in time windows on several threads (`servesim run --sim-threads N`, issue 39)
# writes exactly what one thread writes: report.json (less its wall-clock fields), requests.csv
# and trace.json, compared byte for byte, on a 64-replica fleet behind each router and on every
# bundled scenario (the ones with one replica or disaggregated pools run the one-queue loop).
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
exit $status
