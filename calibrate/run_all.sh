#!/usr/bin/env bash
# The one calibration command: builds servesim_calibrate for this GPU, runs every section (each
# in its own process, with a time limit), the PyTorch prefill-attention sweep and the Llama-3-8B
# reference steps, then writes OUTDIR/raw.json and OUTDIR/reference_steps.json.
#
#   calibrate/run_all.sh OUTDIR
#
# Environment knobs: CAL_QUICK=1 (small sweeps, smoke test), CAL_SECTIONS="gpu gemm ..." (subset),
# CAL_SKIP_REFERENCE=1, CAL_CUDA_ARCH=90 (default: this GPU's), CAL_BUILD_DIR, PYTHON.
#
# Optional section `reference_fused`: the Llama-3-8B reference built from the calibrated kernels
# (reference/llama_step_fused.py -> OUTDIR/reference_steps_fused.json). It runs when CAL_SECTIONS
# names it or CAL_REFERENCE_FUSED=1. Only it: CAL_SECTIONS=reference_fused calibrate/run_all.sh OUTDIR
# (no CMake build, no raw.json merge, no plain reference).
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
COMMAND="calibrate/run_all.sh $*${CAL_QUICK:+ (CAL_QUICK=$QUICK)}${CAL_SECTIONS:+ (CAL_SECTIONS=$CAL_SECTIONS)}"
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 ))s] $*"; }

CUDA_ALL="gpu launch bandwidth host_copy elementwise attention_decode attention_decode_kv quant_gemm gemm contention"
CUDA_OPTIONAL="attention_decode_mmha"   # run only when CAL_SECTIONS names it; not merged into raw.json
SECTIONS=${CAL_SECTIONS:-$CUDA_ALL}
CUDA_SECTIONS=""
for s in $SECTIONS; do [[ " $CUDA_ALL $CUDA_OPTIONAL " == *" $s "* ]] && CUDA_SECTIONS+="$s "; done
RUN_FUSED=0
{ [[ " $SECTIONS " == *" reference_fused "* ]] || [ "${CAL_REFERENCE_FUSED:-0}" = 1 ]; } && RUN_FUSED=1
ONLY_FUSED=0   # CAL_SECTIONS names reference_fused and nothing else
[ -n "${CAL_SECTIONS:-}" ] && [ -z "$(echo " $SECTIONS " | sed 's/ reference_fused / /g' | tr -d ' ')" ] && ONLY_FUSED=1

# ---- build (only what changed; a fresh checkout builds from scratch in about a minute)
ARCH=${CAL_CUDA_ARCH:-}
if [ -z "$ARCH" ] && command -v nvidia-smi >/dev/null; then
  ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
fi
ARCH=${ARCH:-90}
if [ -n "$CUDA_SECTIONS" ]; then
  stamp "build for sm_$ARCH in $BUILD"
  cmake -S "$HERE" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >/dev/null \
    && cmake --build "$BUILD" -j "$(nproc)" || { echo "BUILD FAILED"; exit 1; }
fi
BIN="$BUILD/servesim_calibrate"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv 2>/dev/null || true
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)

# ---- CUDA sections: one process each, so a crash or hang loses only that section.
# Order: cheap and independent first; GEMM last among the CUDA ones (largest).
declare -A LIMIT=([gpu]=60 [launch]=60 [bandwidth]=120 [host_copy]=120 [elementwise]=120
                  [attention_decode]=150 [attention_decode_kv]=150 [attention_decode_mmha]=200 [quant_gemm]=180
                  [gemm]=300 [contention]=60)
FAILED=()
for s in $CUDA_SECTIONS; do
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

if [ "$ONLY_FUSED" != 1 ]; then
  stamp "merge -> $OUTDIR/raw.json"
  "$PY" "$HERE/merge_raw.py" "$OUTDIR" --command "$COMMAND" --driver "$DRIVER" || FAILED+=(merge)
fi

# ---- reference end-to-end steps (separate output)
if [ "${CAL_SKIP_REFERENCE:-0}" != 1 ] && [ "$ONLY_FUSED" != 1 ]; then
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

# ---- optional: reference built from the calibrated kernels (builds reference/fused_ops.cu via
# torch.utils.cpp_extension into $BUILD/fused_ops, a few seconds)
if [ "$RUN_FUSED" = 1 ]; then
  stamp "reference/llama_step_fused.py"
  timeout 480 "$PY" "$HERE/reference/llama_step_fused.py" --out "$OUTDIR/reference_steps_fused.json" $QFLAG \
      --build-dir "$BUILD/fused_ops" --command "$COMMAND" \
    || { echo "reference/llama_step_fused.py FAILED"; FAILED+=(reference_fused); }
fi

stamp "done"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "FAILED: ${FAILED[*]}"
  exit 1
fi
if [ "$ONLY_FUSED" = 1 ]; then
  echo "all sections OK: $OUTDIR/reference_steps_fused.json"
else
  echo "all sections OK: $OUTDIR/raw.json $OUTDIR/reference_steps.json"
fi
