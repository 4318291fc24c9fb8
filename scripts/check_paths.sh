#!/usr/bin/env bash
# Fails when a committed text file names a place outside the repository: an absolute path of
# the machine that wrote it (home, work or mount folders; in JSON, /tmp too, since a JSON file
# records provenance, not scratch space) or a relative path that climbs out of the checkout to
# the reference folder beside it (../shared). A fresh clone has neither.
#   scripts/check_paths.sh [REPO_DIR]     (default: the repository holding this script)
# Lists each offending line as FILE:LINE: TEXT and exits 1; exits 0 when there is none.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# Files to check: what git tracks (plus new, not ignored files) in a checkout; every file but the
# build trees in a copy without .git (as .ci/run's fresh-clone test makes).
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard
  else
    find . -type f -not -path './.git/*' -not -path './build*' -not -path './out/*' -print0
  fi
}

# The first folder of an absolute path, after a character that cannot precede one in a longer
# path, URL or shell variable (so "dir + "/a/x"", "https://x/y" and "$OUT/x" do not count).
lead='(^|[^A-Za-z0-9_.:/~${}>+-])'
machine_roots='(home|Users|root|work|workspace|mnt|media|scratch|srv|opt|private|Volumes|builds|runner|nfs|gpfs|lustre)'
any_file="${lead}/${machine_roots}/|\.\./shared/|[A-Za-z]:\\\\(Users|work)"
json_file="${lead}/tmp/"

status=0
report() {  # pattern, files (NUL-separated on stdin)
  local hits
  hits=$(xargs -0 -r grep -nIE -- "$1" 2>/dev/null | grep -v '^scripts/check_paths\.sh:' || true)
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits" | cut -c1-240
    status=1
  fi
}
# Verbatim device logs (calibrate/results/**/*_log.txt: what the lent machine printed, kept as
# recorded) quote that machine's own paths (its Python's warnings); they are records, not paths
# anything here reads.
checked() { list_files | grep -zv '^\(\./\)\?scripts/check_paths\.sh$' | grep -zv '^\(\./\)\?calibrate/results/.*_log\.txt$'; }
# Not `checked | report`: report would run in a subshell and its status=1 would be lost (the
# check then passed whatever it found).
report "$any_file" < <(checked)
report "$json_file" < <(checked | grep -z '\.json$')
if [ "$status" -ne 0 ]; then
  echo "check_paths: the lines above name paths outside the repository; use repository-relative paths" >&2
fi
exit "$status"
