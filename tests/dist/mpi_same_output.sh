#!/usr/bin/env bash
# `mpirun -n 2 servesim ... --mpi` writes exactly what the serial run writes: stdout, --csv and
# --md of a sweep (with replications), plan's --json and saturate's text, compared byte for byte.
#   mpi_same_output.sh SERVESIM MPIEXEC [MPIEXEC flags...]
# Registered by tests/CMakeLists.txt only when CMake found MPI.
set -u
SERVESIM=$(realpath "$1")
shift
MPIRUN=("$@")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
status=0

# same NAME ARGS...: the serial run into serial/, the 2-rank run into mpi/, then every file compared.
same() {
  local name=$1
  shift
  mkdir -p "serial/$name" "mpi/$name"
  (cd "serial/$name" && "$SERVESIM" "$@" >stdout 2>stderr) || { echo "FAIL [$name]: serial run exited $?"; cat "serial/$name/stderr"; status=1; return; }
  (cd "mpi/$name" && timeout 120 "${MPIRUN[@]}" "$SERVESIM" "$@" --mpi >stdout 2>stderr) ||
    { echo "FAIL [$name]: mpirun exited $?"; cat "mpi/$name/stderr"; status=1; return; }
  for f in "serial/$name"/*; do
    local base=${f##*/}
    [ "$base" = stderr ] && continue
    if cmp -s "$f" "mpi/$name/$base"; then
      echo "ok   [$name] $base identical ($(wc -c <"$f") bytes)"
    else
      echo "FAIL [$name] $base differs:"; diff "$f" "mpi/$name/$base" | head -20; status=1
    fi
  done
}

scenario="$ROOT/tests/dist/small.json"
same sweep sweep "$scenario" --grid engine.max_num_seqs=4,8,16,32 --grid workload.arrival.rate_per_s=2,8 \
  --replications 2 --csv table.csv --md table.md --serial
same plan plan --model llama-2-7b --rate 4 --slo ttft=2s,tpot=100ms --hw a100-80gb-sxm,h100-sxm --tp 1 \
  --workload "$scenario" --replications 2 --tolerance 0.1 --json
same saturate saturate "$scenario" --slo ttft=1s,tpot=60ms --replications 3 --tolerance 0.1 --md saturate.md --serial
exit $status
