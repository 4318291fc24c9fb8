#!/usr/bin/env bash
# `servesim sweep --mpi` over 200 scenarios (bench/million.json at 20 arrival rates x 10 seeds,
# REQUESTS requests each) on 1 MPI rank and on RANKS (default 2), one thread per rank (--serial),
# so the ranks are the only parallelism. Prints per run the wall time and each rank's CPU seconds,
# then two speed-ups: wall time, and CPU seconds of the busiest rank (what the wall time would be
# on cores nobody else uses: on a shared host the wall-time figure also measures the neighbours).
# Checks that both runs wrote the table of a serial run without MPI, byte for byte.
#   bench/sweep200_mpi.sh            (REQUESTS=2000 RANKS=2 MPIRUN=mpirun MPIRUN_FLAGS=...)
# Needs a build with MPI (CMake found Open MPI).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SERVESIM:-build/servesim}
REQUESTS=${REQUESTS:-2000}
RANKS=${RANKS:-2}
MPIRUN=${MPIRUN:-mpirun}
[ -x "$BIN" ] || { echo "sweep200_mpi: build first (make build)" >&2; exit 2; }
command -v "$MPIRUN" >/dev/null || { echo "sweep200_mpi: $MPIRUN not found (Debian: openmpi-bin)" >&2; exit 2; }
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
rates=$(python3 -c 'print(",".join(f"{4 + 24 * i / 19:.4g}" for i in range(20)))')
args=(sweep "$PWD/bench/million.json" --set workload.num_requests="$REQUESTS" --grid workload.arrival.rate_per_s="$rates"
      --grid seed=0,1,2,3,4,5,6,7,8,9 --serial --csv table.csv)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin=$(realpath "$BIN")

# timed NAME CMD...: runs CMD in $out/NAME (each servesim process writes its CPU seconds to
# cpu.RANK), prints "NAME wall_s W busiest_rank_cpu_s C ranks_cpu_s C0,C1,...".
timed() {
  local name=$1
  shift
  mkdir -p "$out/$name"
  local start end
  start=$(date +%s.%N)
  (cd "$out/$name" && "$@" >stdout 2>stderr) || { cat "$out/$name/stderr" >&2; exit 1; }
  end=$(date +%s.%N)
  python3 - "$out/$name" "$name" "$start" "$end" <<'PY'
import glob, sys
d, name, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
cpu = [sum(map(float, open(f).read().split()[-2:])) for f in sorted(glob.glob(d + "/cpu.*"))]
print(f"{name} wall_s {end - start:.2f} busiest_rank_cpu_s {max(cpu):.2f} ranks_cpu_s {','.join(f'{c:.2f}' for c in cpu)}")
PY
}
# One servesim process, its user + system CPU seconds in cpu.<MPI rank>.
rank_cmd=(sh -c '/usr/bin/time -f "%U %S" -o "cpu.${OMPI_COMM_WORLD_RANK:-0}" "$0" "$@"' "$bin" "${args[@]}")

echo "200 scenarios x $REQUESTS requests (bench/million.json), one thread per rank; $(nproc) cores here, load $(cut -d' ' -f1 /proc/loadavg)"
timed serial "${rank_cmd[@]}"
one=$(timed ranks1 "$MPIRUN" -n 1 ${MPIRUN_FLAGS:-} "${rank_cmd[@]}" --mpi)
echo "$one"
two=$(timed "ranks$RANKS" "$MPIRUN" -n "$RANKS" ${MPIRUN_FLAGS:-} "${rank_cmd[@]}" --mpi)
echo "$two"
for run in ranks1 "ranks$RANKS"; do
  cmp -s "$out/serial/stdout" "$out/$run/stdout" && cmp -s "$out/serial/table.csv" "$out/$run/table.csv" ||
    { echo "sweep200_mpi: $run wrote a different table than the serial run" >&2; exit 1; }
done
python3 - "$one" "$two" "$RANKS" <<'PY'
import sys
a, b = sys.argv[1].split(), sys.argv[2].split()
print(f"speed-up {sys.argv[3]} ranks vs 1: wall {float(a[2]) / float(b[2]):.2f}x, busiest rank's CPU {float(a[4]) / float(b[4]):.2f}x "
      "(outputs byte-identical to the serial run)")
PY
