#!/usr/bin/env bash
# Proves that a fresh clone works on its own: copies this checkout (what git tracks plus new, not
# ignored files; no build trees, no .git) into an empty temporary folder with nothing beside it
# and runs the README's two set-up commands there, `make run` then `make test`.
#   scripts/fresh_clone_check.sh          (KEEP=1 keeps the copy and prints where it is)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$tmp"' EXIT; fi
copy="$tmp/servesim"
mkdir "$copy"
# --ignore-failed-read: a tracked file deleted in the working tree is simply not copied.
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
  tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$copy"
echo "fresh copy: $copy ($(ls "$tmp" | wc -l) entry in its folder)"
cd "$copy"
start=$(date +%s)
make run
make test
echo "fresh copy: make run + make test passed in $(( $(date +%s) - start )) s"
[ -n "${KEEP:-}" ] && echo "kept: $copy"
exit 0
