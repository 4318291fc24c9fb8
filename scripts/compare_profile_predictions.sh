#!/usr/bin/env bash
# Predictions of two builds (or two versions of the hardware profiles) on every bundled profile:
# `step --json` for decode and prefill steps of several shapes and precisions, and a short `run`
# of the default scenario per profile at a moderate rate (2 req/s). Prints, for steps and for runs,
# the largest relative change of any number and where it is. Used to show that a change of profile
# layout or rounding moves the cost model's predictions by less than a bound: exit 1 when a step
# number moves more than MAX_REL (default 1e-3). Runs are printed, not bounded: a discrete-event
# run amplifies a 1e-5 change of a step time (a request joins the next iteration instead of this
# one; a latency crosses one of the quantile histogram's 0.2%-wide buckets), and near saturation
# the same scenario moves its percentiles by percents under any such nudge.
#   scripts/compare_profile_predictions.sh BASE_BIN BASE_DATA_DIR [NEW_BIN]
# BASE_DATA_DIR holds the base's models/, hwprofiles/, scenarios/ (e.g. `git archive BASE
# hwprofiles models scenarios | tar -x -C DIR`); NEW_BIN (default build/servesim) reads its own.
set -euo pipefail
base_bin=$1
base_data=$2
new_bin=${3:-build/servesim}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
profiles=$(ls hwprofiles/*.json | xargs -n1 basename | sed 's/\.json$//' | grep -v '^prices$')
steps=(
  "--model llama-3-8b --batch 1 --context 512"
  "--model llama-3-8b --batch 64 --context 4096"
  "--model llama-3-8b --phase prefill --prompt 128"
  "--model llama-3-8b --phase prefill --prompt 2048"
  "--model llama-2-7b --batch 16 --context 1024"
  "--model llama-3-8b --batch 1 --context 1024 --quant w4a16-awq"
  "--model llama-3-8b --batch 64 --context 1024 --quant w4a16-awq"
  "--model llama-3-8b --batch 32 --context 1024 --quant fp8"
  "--model llama-2-70b --batch 8 --context 2048 --tp 4"
)
n=0
for p in $profiles; do
  for i in "${!steps[@]}"; do
    # shellcheck disable=SC2086
    SERVESIM_DATA_DIR="$base_data" "$base_bin" step --hw "$p" ${steps[$i]} --json >"$tmp/$p.step$i.base.json" 2>/dev/null || true
    # shellcheck disable=SC2086
    "$new_bin" step --hw "$p" ${steps[$i]} --json >"$tmp/$p.step$i.new.json" 2>/dev/null || true
    n=$((n + 1))
  done
  for which in base new; do
    bin=$new_bin
    env=()
    if [ "$which" = base ]; then bin=$base_bin; env=(SERVESIM_DATA_DIR="$base_data"); fi
    env "${env[@]}" "$bin" run scenarios/default.json --quiet --no-html --no-trace --out "$tmp/run.$p.$which" \
      --set hardware="\"$p\"" --set workload.num_requests=300 --set workload.arrival.rate_per_s=2 >/dev/null 2>&1 || true
    cp "$tmp/run.$p.$which/report.json" "$tmp/$p.run.$which.json" 2>/dev/null || true
  done
  n=$((n + 1))
done
python3 - "$tmp" "${MAX_REL:-1e-3}" <<'EOF'
import glob, json, os, sys
tmp, bound = sys.argv[1], float(sys.argv[2])
def walk(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            # usage_series samples KV use at fixed times: a step ending 1 ns later moves a sample.
            if k in ("wall_s", "provenance", "hardware", "usage_series") or k not in b: continue
            walk(a[k], b[k], path + "." + k, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)): walk(x, y, "%s[%d]" % (path, i), out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        out.append((abs(a - b) / max(abs(a), abs(b)) if a != b else 0.0, path))
worst = {}
for base in sorted(glob.glob(os.path.join(tmp, "*.base.json"))):
    new = base[:-len(".base.json")] + ".new.json"
    name = os.path.basename(base)[:-len(".base.json")]
    try:
        a, b = json.load(open(base)), json.load(open(new))
    except (ValueError, OSError):
        ok_a, ok_b = os.path.getsize(base) > 0, os.path.exists(new) and os.path.getsize(new) > 0
        if ok_a != ok_b: sys.exit("only one build answered: " + name)
        continue  # both refused (the model does not fit): nothing to compare
    out = []
    walk(a, b, name, out)
    kind = "run" if ".run" in name else "step"
    w = worst.setdefault(kind, [0.0, "-", 0, 0])
    w[2] += 1
    w[3] += len(out)
    for d, where in out:
        if d > w[0]: w[0], w[1] = d, where
for kind, (d, where, files, numbers) in sorted(worst.items(), reverse=True):
    print("%-4s: %2d outputs, %5d numbers: max relative change %.3g at %s" % (kind, files, numbers, d, where))
sys.exit(0 if worst.get("step", [0.0])[0] <= bound else 1)
EOF
