#!/usr/bin/env bash
# Multi-GPU calibration in one command (issue 10): NCCL collectives and a tensor-parallel
# Llama-3-70B layer on this host's GPUs, NVLink multicast off.
#
#   bash calibrate/nccl/run.sh [OUTDIR]      # default OUTDIR: calibrate/results/h200-multi
#
# 1. builds nccl_bench with nvcc (into $NCCL_BUILD_DIR, default build-cal/) against the NCCL that
#    comes with the CUDA toolkit or the system (override with NCCL_HOME=/path with include/ and lib/);
# 2. runs it over all visible GPUs, eager (OUTDIR/nccl_bench.json) and CUDA-graph replayed
#    (OUTDIR/nccl_bench_graph.json);
# 3. runs tp_layer.py with torchrun for every N in {2, 4, 8} the host has
#    (OUTDIR/tp_layer_tpN.json).
# Logs go to OUTDIR/run_log.txt (and the terminal); `nvidia-smi topo -m` to OUTDIR/topology.txt.
# Knobs: NCCL_QUICK=1 (small sweeps: a smoke test), PYTHON, TORCHRUN, CUDA_ARCH (default: this GPU's).
# Exits 3 when fewer than 2 GPUs are visible, 1 when any step fails (the others still run).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUTDIR=${1:-$ROOT/calibrate/results/h200-multi}
# ---- how many GPUs
NGPU=0
if command -v nvidia-smi >/dev/null 2>&1; then
  NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    NGPU=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
  fi
fi
if [ "$NGPU" -lt 2 ]; then
  echo "run.sh: FAILED: needs at least 2 GPUs on one host, $NGPU visible. This calibration is multi-GPU only"
  echo "        (see docs/multi_gpu_calibration.md); on the workplace's device tool ask for a kind such as nvidia-h200-x2."
  exit 3
fi
mkdir -p "$OUTDIR" || { echo "run.sh: cannot create $OUTDIR"; exit 1; }
OUTDIR=$(cd "$OUTDIR" && pwd)
BUILD=${NCCL_BUILD_DIR:-$ROOT/build-cal}
PY=${PYTHON:-python3}
QUICK=${NCCL_QUICK:-0}
QFLAG=""
[ "$QUICK" = 1 ] && QFLAG="--quick"
COMMAND="bash calibrate/nccl/run.sh $*${NCCL_QUICK:+ (NCCL_QUICK=$QUICK)}"

# NVLink multicast (NVLS) off for everything below; both programs refuse to run otherwise.
export NCCL_NVLS_ENABLE=0
export PYTHONUNBUFFERED=1

exec > >(tee -a "$OUTDIR/run_log.txt") 2>&1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
stamp "run.sh: $COMMAND -> $OUTDIR (NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE)"

nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv 2>/dev/null || true
nvidia-smi topo -m > "$OUTDIR/topology.txt" 2>&1 || true
nvidia-smi nvlink --status > "$OUTDIR/nvlink_status.txt" 2>&1 || true
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
stamp "$NGPU GPUs visible, driver $DRIVER"

FAILED=()

# ---- build nccl_bench
ARCH=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
ARCH=${ARCH:-90}
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
# NCCL: $NCCL_HOME if set; else the toolkit's or the system's; else the one pip installed with torch
# (nvidia-nccl-cu12: include/nccl.h and lib/libnccl.so.2, no unversioned link).
NCCL_HOME=${NCCL_HOME:-}
if [ -z "$NCCL_HOME" ] && [ ! -e "$(dirname "$(command -v "$NVCC")")/../include/nccl.h" ] && [ ! -e /usr/include/nccl.h ]; then
  NCCL_HOME=$("$PY" -c "import nvidia.nccl as m; print(list(m.__path__)[0])" 2>/dev/null || true)
  [ -n "$NCCL_HOME" ] && echo "run.sh: using the NCCL of pip package nvidia-nccl: $NCCL_HOME"
fi
NCCL_FLAGS=()
NCCL_LIB=-lnccl
if [ -n "$NCCL_HOME" ]; then
  NCCL_FLAGS=(-I"$NCCL_HOME/include" -L"$NCCL_HOME/lib" -Xlinker -rpath -Xlinker "$NCCL_HOME/lib")
  [ ! -e "$NCCL_HOME/lib/libnccl.so" ] && [ -e "$NCCL_HOME/lib/libnccl.so.2" ] && NCCL_LIB="$NCCL_HOME/lib/libnccl.so.2"
fi
mkdir -p "$BUILD"
BIN="$BUILD/nccl_bench"
stamp "build $BIN for sm_$ARCH"
if ! "$NVCC" -O2 -std=c++17 -arch=sm_"$ARCH" "${NCCL_FLAGS[@]}" "$HERE/nccl_bench.cu" "$NCCL_LIB" -o "$BIN"; then
  echo "run.sh: nccl_bench BUILD FAILED (is NCCL installed? set NCCL_HOME)"
  FAILED+=(build)
fi

# ---- NCCL collectives, all visible GPUs (communicators over 2, 4, 8, ... and all of them)
if [ -x "$BIN" ] && [[ " ${FAILED[*]} " != *" build "* ]]; then
  stamp "nccl_bench (eager)"
  timeout 900 "$BIN" --out "$OUTDIR/nccl_bench.json" --driver "$DRIVER" $QFLAG \
    || { echo "run.sh: nccl_bench (eager) FAILED"; FAILED+=(nccl_bench); }
  stamp "nccl_bench (CUDA graph)"
  timeout 900 "$BIN" --out "$OUTDIR/nccl_bench_graph.json" --driver "$DRIVER" --graph $QFLAG \
    || { echo "run.sh: nccl_bench --graph FAILED"; FAILED+=(nccl_bench_graph); }
fi

# ---- tensor-parallel layer for N in {2, 4, 8} this host has
TORCHRUN=${TORCHRUN:-torchrun}
if ! command -v "$TORCHRUN" >/dev/null 2>&1; then
  TORCHRUN="$PY -m torch.distributed.run"
fi
if ! "$PY" -c "import torch, torch.distributed; assert torch.cuda.is_available()" 2>/dev/null; then
  echo "run.sh: tp_layer SKIPPED: $PY has no CUDA-enabled torch"
  FAILED+=(tp_layer_no_torch)
else
  for N in 2 4 8; do
    [ "$N" -le "$NGPU" ] || continue
    stamp "tp_layer.py, tp=$N"
    CMD="NCCL_NVLS_ENABLE=0 $TORCHRUN --standalone --nproc_per_node $N calibrate/nccl/tp_layer.py --out $OUTDIR/tp_layer_tp$N.json $QFLAG"
    # shellcheck disable=SC2086
    timeout 900 $TORCHRUN --standalone --nproc_per_node "$N" "$HERE/tp_layer.py" \
        --out "$OUTDIR/tp_layer_tp$N.json" --driver "$DRIVER" --command "$CMD (from $COMMAND)" $QFLAG \
      || { echo "run.sh: tp_layer tp=$N FAILED"; FAILED+=("tp_layer_tp$N"); }
  done
fi

stamp "done"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "run.sh: FAILED: ${FAILED[*]} (outputs that exist are in $OUTDIR)"
  exit 1
fi
echo "run.sh: all steps OK: $OUTDIR"
ls -l "$OUTDIR"
