#!/usr/bin/env bash
# Section attention_decode_mmha on a lent H100 / H200: builds servesim_calibrate for this GPU and
# runs only that section (one CTA per query head, TensorRT-LLM's masked_multihead_attention form,
# against the grouped kernel; calibrate/README.md), then prints its tables.
#
#   calibrate/mmha_batch.sh OUTDIR [--quick]
#
# About 1.5-2 min on an H100 (estimate: build ~40 s, section ~30-60 s; its soft budget is 170 s
# and `timeout` kills it at 260 s, keeping what it wrote after each group). Outputs:
# OUTDIR/attention_decode_mmha.json, OUTDIR/attention_decode_mmha_log.txt,
# OUTDIR/attention_decode_mmha_table.txt (calibrate/mmha_table.py), OUTDIR/gpu.json (the gpu
# section), OUTDIR/build_log.txt and OUTDIR/gpu.txt (read-only nvidia-smi queries: nothing on the
# GPU is changed).
# Environment: CAL_BUILD_DIR (default build-cal/), CAL_CUDA_ARCH (default this GPU's), PYTHON.
# Exit status: 0 if the section ran to the end and every correctness check passed, else 1.
set -uo pipefail

OUTDIR=${1:?usage: calibrate/mmha_batch.sh OUTDIR [--quick]}
QFLAG=${2:-}
if [ -n "$QFLAG" ] && [ "$QFLAG" != "--quick" ]; then
  echo "mmha_batch.sh: unknown option '$QFLAG' (only --quick)" >&2
  exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${CAL_BUILD_DIR:-$HERE/../build-cal}
PY=${PYTHON:-python3}
mkdir -p "$OUTDIR"
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"

{
  echo "calibrate/mmha_batch.sh $*"
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,memory.total,temperature.gpu \
    --format=csv 2>&1
} > "$OUTDIR/gpu.txt"
cat "$OUTDIR/gpu.txt"

ARCH=${CAL_CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
ARCH=${ARCH:-90}
stamp "build for sm_$ARCH in $BUILD"
cmake -S "$HERE" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >/dev/null \
  && cmake --build "$BUILD" -j "$(nproc)" > "$OUTDIR/build_log.txt" 2>&1 \
  || { tail -40 "$OUTDIR/build_log.txt"; echo "BUILD FAILED"; exit 1; }
BIN="$BUILD/servesim_calibrate"

RC=0
"$BIN" --section gpu --out "$OUTDIR/gpu.json" || RC=1
stamp "section attention_decode_mmha"
timeout 260 "$BIN" --section attention_decode_mmha --out "$OUTDIR/attention_decode_mmha.json" ${QFLAG:+"$QFLAG"} 2>&1 \
  | tee "$OUTDIR/attention_decode_mmha_log.txt"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "SECTION attention_decode_mmha FAILED (exit, failed check or timeout)"; RC=1; }
if [ -f "$OUTDIR/attention_decode_mmha.json" ]; then
  "$PY" "$HERE/mmha_table.py" "$OUTDIR/attention_decode_mmha.json" | tee "$OUTDIR/attention_decode_mmha_table.txt"
fi
stamp "done (exit $RC): $OUTDIR/attention_decode_mmha.json"
exit $RC
