#!/usr/bin/env bash
# Runs every command the README shows, as written, and fails when one exits non-zero: the lines
# of its ```sh blocks and the `build/servesim ...` commands quoted in its text and tables.
# `make ...` lines are left to CI (scripts/fresh_clone_check.sh runs them on a fresh copy).
# The commands run in an empty temporary folder that sees the checkout's data (models/,
# hwprofiles/, scenarios/, data/, scripts/) and has build/servesim = SERVESIM_BIN, so what they
# write (out/, reports) never lands in the checkout.
#   scripts/check_readme_commands.sh SERVESIM_BIN [README]
set -euo pipefail
bin=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
readme=${2:-$repo/README.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in models hwprofiles scenarios data scripts; do ln -s "$repo/$d" "$tmp/$d"; done
mkdir "$tmp/build"
ln -s "$bin" "$tmp/build/servesim"

# Commands: lines of ```sh blocks (comments after " #" dropped), then inline `build/servesim ...`.
mapfile -t commands < <(python3 - "$readme" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
out = []
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    for line in block.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#") and not line.startswith("make "):
            out.append(line)
prose = re.sub(r"```.*?```", "", text, flags=re.S)
for cmd in re.findall(r"`(build/servesim [^`]+)`", prose):
    if cmd not in out:
        out.append(cmd)
print("\n".join(out))
EOF
)
[ "${#commands[@]}" -gt 0 ] || { echo "no commands found in $readme" >&2; exit 1; }
failed=0
cd "$tmp"
for c in "${commands[@]}"; do
  start=$(date +%s%N)
  if out=$(bash -c "$c" 2>&1 </dev/null); then
    printf 'ok   %5.1f s  %s\n' "$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { print (b - a) / 1e9 }')" "$c"
  else
    rc=$?
    printf 'FAIL (exit %d)  %s\n%s\n' "$rc" "$c" "$(printf '%s\n' "$out" | tail -n 5)"
    failed=$((failed + 1))
  fi
done
echo "${#commands[@]} README commands, $failed failed"
[ "$failed" -eq 0 ]
