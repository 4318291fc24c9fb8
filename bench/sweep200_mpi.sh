#!/usr/bin/env bash
# `servesim sweep --mpi` over 200 scenarios (bench/million.json at 20 arrival rates x 10 seeds,
# REQUESTS requests each) on 1 MPI rank and on 2, one thread per rank (--serial), so the ranks are
# the only parallelism: prints both wall times (and CPU seconds), the speed-up, and checks that
# both runs and a serial run without MPI wrote byte-identical tables.
#   bench/sweep200_mpi.sh            (REQUESTS=2000 RANKS=2 MPIRUN=mpirun MPIRUN_FLAGS=...)
# Needs a build with MPI (CMake found Open MPI). The speed-up is bounded by the cores actually free:
# on a shared host, other work on the cores shows up as a lower number.
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
args=(sweep bench/million.json --set workload.num_requests="$REQUESTS" --grid workload.arrival.rate_per_s="$rates"
      --grid seed=0,1,2,3,4,5,6,7,8,9 --serial --csv table.csv)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin=$(realpath "$BIN")

# timed NAME CMD...: runs CMD in $out/NAME, prints "NAME wall_s W cpu_s C".
timed() {
  local name=$1
  shift
  mkdir -p "$out/$name"
  local start end
  start=$(date +%s.%N)
  (cd "$out/$name" && /usr/bin/time -f "%U %S" -o time.txt "$@" >stdout 2>stderr) || { cat "$out/$name/stderr" >&2; exit 1; }
  end=$(date +%s.%N)
  python3 -c "import sys; u, s = open('$out/$name/time.txt').read().split()[-2:]; print(f'$name wall_s {$end - $start:.2f} cpu_s {float(u) + float(s):.2f}')"
}

echo "200 scenarios x $REQUESTS requests (bench/million.json), one thread per rank; $(nproc) cores here"
timed serial "$bin" "${args[@]}"
one=$(timed ranks1 "$MPIRUN" -n 1 ${MPIRUN_FLAGS:-} "$bin" "${args[@]}" --mpi)
echo "$one"
two=$(timed "ranks$RANKS" "$MPIRUN" -n "$RANKS" ${MPIRUN_FLAGS:-} "$bin" "${args[@]}" --mpi)
echo "$two"
for run in ranks1 "ranks$RANKS"; do
  cmp -s "$out/serial/stdout" "$out/$run/stdout" && cmp -s "$out/serial/table.csv" "$out/$run/table.csv" ||
    { echo "sweep200_mpi: $run wrote a different table than the serial run" >&2; exit 1; }
done
python3 -c "import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); print(f'speed-up $RANKS ranks vs 1: {float(a[2]) / float(b[2]):.2f}x (outputs byte-identical to the serial run)')" "$one" "$two"
