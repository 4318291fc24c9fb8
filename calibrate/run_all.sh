#!/usr/bin/env bash
# The one calibration command: builds servesim_calibrate for this GPU, runs every section (each
# in its own process, with a time limit), the PyTorch prefill-attention sweep and the Llama-3-8B
# reference steps, then writes OUTDIR/raw.json and OUTDIR/reference_steps.json.
#
#   calibrate/run_all.sh OUTDIR
#
# Environment knobs: CAL_QUICK=1 (small sweeps, smoke test), CAL_SECTIONS="gpu gemm ..." (subset),
# CAL_SKIP_REFERENCE=1, CAL_CUDA_ARCH=90 (default: this GPU's), CAL_BUILD_DIR, PYTHON.
set -uo pipefail

OUTDIR=${1:?usage: calibrate/run_all.sh OUTDIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${CAL_BUILD_DIR:-$HERE/../build-cal}
PY=${PYTHON:-python3}
QUICK=${CAL_QUICK:-0}
QFLAG=""
[ "$QUICK" = 1 ] && QFLAG="--quick"
mkdir -p "$OUTDIR/parts"
OUTDIR=$(cd "$OUTDIR" && pwd)
COMMAND="calibrate/run_all.sh $*${CAL_QUICK:+ (CAL_QUICK=$QUICK)}"
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 ))s] $*"; }

# ---- build (only what changed; a fresh checkout builds from scratch in about a minute)
ARCH=${CAL_CUDA_ARCH:-}
if [ -z "$ARCH" ] && command -v nvidia-smi >/dev/null; then
  ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
fi
ARCH=${ARCH:-90}
stamp "build for sm_$ARCH in $BUILD"
cmake -S "$HERE" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >/dev/null \
  && cmake --build "$BUILD" -j "$(nproc)" || { echo "BUILD FAILED"; exit 1; }
BIN="$BUILD/servesim_calibrate"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv 2>/dev/null || true
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)

# ---- CUDA sections: one process each, so a crash or hang loses only that section.
# Order: cheap and independent first; GEMM last among the CUDA ones (largest).
SECTIONS=${CAL_SECTIONS:-"gpu launch bandwidth host_copy elementwise attention_decode quant_gemm gemm contention"}
declare -A LIMIT=([gpu]=60 [launch]=60 [bandwidth]=120 [host_copy]=120 [elementwise]=120
                  [attention_decode]=150 [quant_gemm]=180 [gemm]=300 [contention]=60)
FAILED=()
for s in $SECTIONS; do
  stamp "section $s"
  rm -f "$OUTDIR/parts/$s.json"
  if ! timeout "${LIMIT[$s]:-300}" "$BIN" --section "$s" --out "$OUTDIR/parts/$s.json" $QFLAG; then
    # A partial fragment (sections write after each outer loop) is kept and merged.
    echo "SECTION $s FAILED (exit or timeout)"
    FAILED+=("$s")
  fi
done

# ---- PyTorch prefill attention (flash SDPA)
if [ -z "${CAL_SECTIONS:-}" ] || [[ " $SECTIONS " == *" attention_prefill "* ]]; then
  stamp "attention_prefill (torch SDPA)"
  timeout 240 "$PY" "$HERE/attention_prefill.py" --out "$OUTDIR/parts/attention_prefill.json" $QFLAG \
    || { echo "attention_prefill FAILED"; FAILED+=(attention_prefill); }
fi

stamp "merge -> $OUTDIR/raw.json"
"$PY" "$HERE/merge_raw.py" "$OUTDIR" --command "$COMMAND" --driver "$DRIVER" || FAILED+=(merge)

# ---- reference end-to-end steps (separate output)
if [ "${CAL_SKIP_REFERENCE:-0}" != 1 ]; then
  stamp "reference/llama_step.py"
  if timeout 420 "$PY" "$HERE/reference/llama_step.py" --out "$OUTDIR/reference_steps.json" $QFLAG \
      --command "$COMMAND"; then
    "$PY" "$HERE/merge_raw.py" "$OUTDIR" --command "$COMMAND" --driver "$DRIVER" \
      --reference "$OUTDIR/reference_steps.json" >/dev/null 2>&1 || true
  else
    echo "reference/llama_step.py FAILED"
    FAILED+=(reference)
  fi
fi

stamp "done"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "FAILED: ${FAILED[*]}"
  exit 1
fi
echo "all sections OK: $OUTDIR/raw.json $OUTDIR/reference_steps.json"
