# The hostile-input cases, one function each (run by run_case.sh; ctest runs each as
# hostile.<name>, found by the `case_` prefix). Classes: hang_ (work that would never end, refused
# before it starts), empty_ (a run with nothing to report), write_ (an output that cannot be
# written), range_ (a number outside its physical range), raw_ (input that used to reach the user
# as a library or invariant message), msg_ (a message that named the wrong thing).
# shellcheck shell=bash disable=SC2034

# --- write: a failed write exits non-zero naming the path, and leaves no output that looks complete
case_write_out_dir_on_full_disk() {
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "/dev/full" -- run s.json --out /dev/full --quiet
  [ -c /dev/full ] || fail "/dev/full is no longer a device"
}
case_write_csv_to_full_disk() {
  expect 2 "/dev/full" -- roofline --model llama-3-8b --hw h100-sxm --batch 1 --context 128 --csv /dev/full
  [ -c /dev/full ] || fail "/dev/full was replaced"
}
case_write_md_to_full_disk() {
  expect 2 "/dev/full" -- roofline --model llama-3-8b --hw h100-sxm --batch 1 --context 128 --md /dev/full
}
case_write_stdout_to_full_disk() {
  expect 2 "<stdout>" /dev/full -- list models
}
case_write_json_stdout_to_full_disk() {
  expect 2 "<stdout>" /dev/full -- step --model llama-3-8b --hw h100-sxm --batch 1 --context 128 --json
}
case_write_report_into_a_file() {
  # --out names a regular file: no directory can be made there.
  echo x >plain
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "plain" -- run s.json --out plain/sub --quiet
}

