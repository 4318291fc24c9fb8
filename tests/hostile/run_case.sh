#!/usr/bin/env bash
# Runs one case of the hostile-input suite (cases.sh) in a scratch folder:
#   run_case.sh SERVESIM CASE
# Each case feeds servesim an input an attacker or a careless user would, and passes when servesim
# refuses it in time with one line naming the key, flag or path (see expect below).
set -u
SERVESIM=$(realpath "$1")
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

fail() {
  echo "FAIL [$CASE]: $*"
  echo "--- stderr:"; cat "$WORK/stderr" 2>/dev/null
  exit 1
}

# expect EXIT TEXT [STDOUT_FILE] -- ARGS...: runs `servesim ARGS` for at most 15 s and passes when it
# exits with EXIT and, for a non-zero EXIT, its stderr is one line that contains TEXT and no raw
# library or internal message. STDOUT_FILE (default: a scratch file) receives stdout.
expect() {
  local want=$1 text=$2 out="$WORK/stdout"
  shift 2
  if [ "$1" != "--" ]; then out=$1; shift; fi
  shift
  timeout 15 "$SERVESIM" "$@" >"$out" 2>"$WORK/stderr"
  local got=$?
  [ "$got" != 124 ] || fail "hung: killed after 15 s: servesim $*"
  [ "$got" = "$want" ] || fail "exit $got, want $want: servesim $*"
  if [ "$want" != 0 ]; then
    local lines
    lines=$(wc -l <"$WORK/stderr")
    [ "$lines" = 1 ] || fail "stderr has $lines lines, want one"
    grep -qF -- "$text" "$WORK/stderr" || fail "stderr does not name '$text'"
    # Library wording (nlohmann, libstdc++, cxxopts' quotes), a bug line, or no file named.
    ! grep -qE 'internal error|json\.exception|basic_filebuf|invariant|<input>|‘' "$WORK/stderr" || fail "raw internal message"
  fi
  echo "ok [$CASE]: exit $got: $(head -c 300 "$WORK/stderr")"
}

# A small scenario (300 requests, about a second to simulate) with WORKLOAD as its workload object
# and EXTRA as more top-level keys: scenario FILE WORKLOAD [EXTRA].
scenario() {
  cat >"$1" <<JSON
{
  "name": "hostile", "seed": 1, "model": "llama-3-8b", "hardware": "${HW:-a100-80gb-sxm}", "dtype": "bf16",
  "engine": { "max_num_seqs": 32, "block_size": 16, "gpu_memory_utilization": 0.9 },
  "workload": $2
  ${3:-}
}
JSON
}
SMALL_WORKLOAD='{ "num_requests": 300, "arrival": { "impl": "poisson", "rate_per_s": 6 },
  "prompt_tokens": { "impl": "uniform", "min_tokens": 32, "max_tokens": 1024 },
  "output_tokens": { "impl": "lognormal", "mean_tokens": 120, "sigma": 0.6, "min_tokens": 4, "max_tokens": 512 } }'
# A trace workload reading FILE in FORMAT: trace_workload FILE FORMAT [MORE_KEYS]
trace_workload() {
  echo "{ ${3:-} \"arrival\": { \"impl\": \"trace\" }, \"trace\": { \"path\": \"$1\", \"format\": \"$2\" ${4:-} },
    \"prompt_tokens\": { \"impl\": \"trace\" }, \"output_tokens\": { \"impl\": \"trace\" } }"
}

# shellcheck source=cases.sh
source "$HERE/cases.sh"
declare -F "case_$CASE" >/dev/null || { echo "no case '$CASE' in cases.sh"; exit 1; }
"case_$CASE"
