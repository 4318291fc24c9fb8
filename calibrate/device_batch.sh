#!/usr/bin/env bash
# One batch on a lent GPU for issues 40 and 38: the quantized-kernel measurements
# (quant/measure_quant.py) and the speculative-decoding pieces (specdec/measure_specdec.py).
#
#   calibrate/device_batch.sh OUTDIR [--quick]
#
# Each script runs its sections in child processes with time limits inside its own budget
# (QUANT_BUDGET_S, default 138 s; SPECDEC_BUDGET_S, default 92 s), and `timeout` caps each script
# 10 s above its budget, so the whole batch stays under 240 s. Outputs: OUTDIR/quant_kernels.json,
# OUTDIR/specdec.json, OUTDIR/parts/<section>.json, OUTDIR/quant_log.txt, OUTDIR/specdec_log.txt,
# OUTDIR/gpu.txt (nvidia-smi, read-only queries: nothing on the GPU is changed).
# Exit status: 0 if every section ran without error and every check passed, else 1.
set -uo pipefail

OUTDIR=${1:?usage: calibrate/device_batch.sh OUTDIR [--quick]}
QFLAG=${2:-}
if [ -n "$QFLAG" ] && [ "$QFLAG" != "--quick" ]; then
  echo "device_batch.sh: unknown option '$QFLAG' (only --quick)" >&2
  exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
QB=${QUANT_BUDGET_S:-138}
SB=${SPECDEC_BUDGET_S:-92}
mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 ))s] $*"; }

{
  echo "calibrate/device_batch.sh $*"
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,memory.total,temperature.gpu \
    --format=csv 2>&1
} > "$OUTDIR/gpu.txt"   # torch, CUDA and Triton versions are in every section's JSON
cat "$OUTDIR/gpu.txt"

RC=0
stamp "quant/measure_quant.py (budget ${QB} s)"
timeout $((QB + 10)) "$PY" "$HERE/quant/measure_quant.py" --out "$OUTDIR" --budget-s "$QB" $QFLAG 2>&1 \
  | tee "$OUTDIR/quant_log.txt"
[ "${PIPESTATUS[0]}" = 0 ] || RC=1
stamp "specdec/measure_specdec.py (budget ${SB} s)"
timeout $((SB + 10)) "$PY" "$HERE/specdec/measure_specdec.py" --out "$OUTDIR" --budget-s "$SB" $QFLAG 2>&1 \
  | tee "$OUTDIR/specdec_log.txt"
[ "${PIPESTATUS[0]}" = 0 ] || RC=1
echo "== summary (repeated from the logs)"
for f in quant_log.txt specdec_log.txt; do
  awk '/^section +status/{p=1} p{print} /^total /{p=0}' "$OUTDIR/$f"
done
stamp "done: $OUTDIR/quant_kernels.json $OUTDIR/specdec.json (exit $RC: 1 = an error, a timeout or a failed check; see the tables above)"
exit $RC
