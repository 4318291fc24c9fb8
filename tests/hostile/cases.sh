# The hostile-input cases, one function each (run by run_case.sh; ctest runs each as
# hostile.<name>, found by the `case_` prefix). Classes: hang_ (work that would never end, refused
# before it starts), empty_ (a run with nothing to report), write_ (an output that cannot be
# written), range_ (a number outside its physical range), raw_ (input that used to reach the user
# as a library or invariant message), msg_ (a message that named the wrong thing), stream_ (a
# path that is not a regular file: read through the byte limit, never blocking or growing without
# end), crash_ (a signal instead of a message).
# shellcheck shell=bash disable=SC2034

# --- hang: refused with the estimate and the key or flag to change
case_hang_trace_loop_at_t0() {
  printf '{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 5}\n%.0s' 1 2 3 >t0.jsonl
  scenario s.json "$(trace_workload t0.jsonl jsonl '"duration_s": 10,' ', "loop": true')"
  expect 2 "workload.trace.loop" -- run s.json --out out --quiet
}
case_hang_trace_loop_without_end() {
  printf '{"arrival_s": %s, "prompt_tokens": 10, "output_tokens": 5}\n' 0 1 2 >t.jsonl
  scenario s.json "$(trace_workload t.jsonl jsonl '' ', "loop": true')"
  expect 2 "workload.trace.loop" -- run s.json --out out --quiet
}
case_hang_step_batch_1e10() {
  expect 2 "--batch" -- step --model llama-3-8b --hw h100-sxm --batch 10000000000 --context 16
}
case_msg_step_attention_dp_needs_experts_over_tp() {
  expect 2 "--attention-dp: pairs attention data parallelism with expert parallelism: llama-3-8b is dense" -- step --model llama-3-8b --hw h100-sxm --tp 2 --attention-dp --batch 1 --context 16
  expect 2 "--attention-dp: needs --tp > 1 and --ep equal to --tp" -- step --model qwen3-30b-a3b --hw h100-sxm --tp 4 --ep 2 --attention-dp --batch 1 --context 16
  # --batch is one rank's, checked against one rank's KV cache (every KV head of its sequences).
  expect 2 "--batch" -- step --model qwen3-235b-a22b --hw h100-sxm --quant fp8 --tp 8 --ep 8 --attention-dp --batch 4096 --context 4096
}
case_hang_contention_batch_1e10() {
  # Had no upper bound (1e10 ran past 20 s); now step's --batch range, declared with the flag.
  expect 2 "servesim contention: --batch: must be in [1, 1048576], got 1e+10" -- contention --model llama-3-8b --hw h100-sxm --batch 10000000000
}
case_hang_run_replications() {
  scenario s.json "${SMALL_WORKLOAD/\"num_requests\": 300/\"num_requests\": 1000000}"
  expect 2 "--replications" -- run s.json --out out --quiet --replications 1000
  [ ! -e out/report.json ] || fail "a refused run wrote out/report.json"
}
case_hang_run_replications_1000() {
  # 1000 replications of a 4000-request scenario: within --replications' range, but about 40 s of
  # CPU, past the default budget.
  scenario s.json '{ "num_requests": 4000, "arrival": { "impl": "poisson", "rate_per_s": 6 },
    "prompt_tokens": { "impl": "fixed", "value_tokens": 500 }, "output_tokens": { "impl": "fixed", "value_tokens": 250 } }'
  expect 2 "--replications, or pass --no-work-limit" -- run s.json --out out --quiet --replications 1000
}
case_hang_sweep_50000_combinations() {
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "--no-work-limit" -- sweep s.json --grid "seed=$(seq -s, 1 250)" --grid "engine.max_num_seqs=$(seq -s, 1 200)"
}
case_hang_saturate_huge_workload() {
  # 11 expected probes x 3 replications of 1e6 requests: hours.
  scenario s.json "${SMALL_WORKLOAD/\"num_requests\": 300/\"num_requests\": 1000000}"
  expect 2 "--no-work-limit" -- saturate s.json --slo ttft=1s
  grep -qF "workload.num_requests" "$WORK/stderr" || fail "does not name workload.num_requests"
}
case_hang_saturate_probe_grows_with_rate() {
  # A workload bounded by duration_s: the first probe alone, at 1000 req/s for 10,000 s, is 1e7
  # requests per replication (the estimate at the file's 6 req/s passes).
  scenario s.json '{ "duration_s": 10000, "arrival": { "impl": "poisson", "rate_per_s": 6 },
    "prompt_tokens": { "impl": "fixed", "value_tokens": 100 }, "output_tokens": { "impl": "fixed", "value_tokens": 100 } }'
  expect 2 "workload.duration_s (the probe at 1000 req/s" -- saturate s.json --slo ttft=1s --start-rate 1000
}
case_hang_plan_many_options() {
  # Every bundled GPU (88 options with 11 GPUs, 2 precisions and 4 TP sizes), each a search of 100 replications.
  expect 2 "--no-work-limit" -- plan --model llama-3-8b --rate 5 --slo ttft=2s,tpot=100ms --quant bf16,fp8 --replications 100
  grep -qF -- "--replications" "$WORK/stderr" || fail "does not name --replications"
}
case_hang_gen_trace_1e8_requests() {
  # Refused before generating (the limit used to fire only after 1e7 rows were built in memory).
  scenario s.json "${SMALL_WORKLOAD/\"num_requests\": 300/\"num_requests\": 100000000}"
  expect 2 "s.json: workload.num_requests" -- gen-trace s.json --format jsonl --out t.jsonl
  [ ! -e t.jsonl ] || fail "a refused gen-trace wrote t.jsonl"
}
case_hang_all_at_once_1e7() {
  scenario s.json '{ "num_requests": 10000000, "arrival": { "impl": "all_at_once" },
    "prompt_tokens": { "impl": "fixed", "value_tokens": 100 }, "output_tokens": { "impl": "fixed", "value_tokens": 200 } }'
  expect 2 "workload.num_requests" -- run s.json --out out --quiet
}
case_hang_all_at_once_huge() {
  scenario s.json '{ "num_requests": 100000000, "arrival": { "impl": "all_at_once" },
    "prompt_tokens": { "impl": "fixed", "value_tokens": 100 }, "output_tokens": { "impl": "fixed", "value_tokens": 100 } }'
  expect 2 "workload.num_requests" -- run s.json --out out --quiet
}

case_hang_tiny_model_kv_blocks() {
  # hidden_size 8: 32 bytes of KV per token, so an H100 would hold 2.4e9 tokens of KV blocks.
  echo '{"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
    "intermediate_size": 16, "vocab_size": 100, "max_position_embeddings": 2048}' >tiny.json
  HW=h100-sxm scenario s.json "$SMALL_WORKLOAD"
  sed -i 's|"model": "llama-3-8b"|"model": "./tiny.json"|' s.json
  expect 2 "s.json: model: " -- run s.json --out out --quiet
}

# --- empty: nothing to report is an error, with the reason
case_empty_header_only_trace() {
  echo "TIMESTAMP,ContextTokens,GeneratedTokens" >azure.csv
  scenario s.json "$(trace_workload azure.csv azure)"
  expect 2 "no requests" -- run s.json --out out --quiet
  [ ! -e out/report.json ] || fail "an empty run wrote out/report.json"
}
case_empty_jsonl_trace() {
  : >empty.jsonl
  scenario s.json "$(trace_workload empty.jsonl jsonl)"
  expect 2 "empty.jsonl has no rows" -- run s.json --out out --quiet
}
case_empty_burstgpt_all_failed() {
  printf 'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n' >b.csv
  printf '%s,ChatGPT,100,0,100,Conversation log\n' 1 2 3 >>b.csv
  scenario s.json "$(trace_workload b.csv burstgpt)"
  expect 2 "0 output tokens" -- run s.json --out out --quiet
}
case_empty_zero_requests() {
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "workload.num_requests is 0" -- run s.json --out out --quiet --set workload.num_requests=0
}
case_empty_every_request_timed_out() {
  # The client gives up after 1 ms, before any prefill ends.
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "workload.request_timeout_s" -- run s.json --out out --quiet --set workload.request_timeout_s=0.001
}
case_empty_every_request_waited_too_long() {
  # 1e10 s is past the int64 ns clock: it must not turn into "every request rejected".
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "max_waiting_time_s" -- run s.json --out out --quiet --set engine.scheduler.impl=continuous --set engine.scheduler.max_waiting_time_s=1e10
}

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
case_write_stdout_to_closed_pipe() {
  # The reader is gone before servesim writes: was death by SIGPIPE (exit 141, no message).
  { sleep 0.5; timeout 15 "$SERVESIM" list keys 2>"$WORK/stderr"; echo $? >rc; } | true
  [ "$(cat rc)" = 2 ] || fail "exit $(cat rc), want 2"
  grep -qF "<stdout>: write failed" "$WORK/stderr" || fail "does not name <stdout>"
}
case_write_report_into_a_file() {
  # --out names a regular file: no directory can be made there.
  echo x >plain
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "plain" -- run s.json --out plain/sub --quiet
}
case_write_four_runs_into_one_out() {
  # Four runs into one --out used to leave one seed's report.json beside a trace.json that was not
  # JSON (every writer used FILE.tmp). Now the folder is locked for a run: each run exits 0 or
  # refuses, and the folder holds one run's files, byte for byte what that seed writes alone.
  scenario s.json "${SMALL_WORKLOAD/\"num_requests\": 300/\"num_requests\": 20000}"
  local i rc seed
  for i in 1 2 3 4; do
    (timeout 15 "$SERVESIM" run s.json --seed "$i" --out same --quiet 2>"err.$i"; echo $? >"rc.$i") &
  done
  wait
  for i in 1 2 3 4; do
    rc=$(cat "rc.$i")
    case $rc in
      0) ;;
      2) grep -qF "same: another servesim is writing into this folder; wait for it to end or give another --out" "err.$i" ||
           fail "run $i: exit 2 with $(cat "err.$i")" ;;
      *) fail "run $i: exit $rc" ;;
    esac
  done
  seed=$(grep -m1 -o '"seed": [0-9]*' same/report.json | grep -o '[0-9]*$')
  expect 0 "" -- run s.json --seed "$seed" --out alone --quiet
  for f in report.json requests.csv trace.json report.html; do cmp -s "same/$f" "alone/$f" || fail "same/$f is not seed $seed's"; done
  [ "$(ls same)" = "$(printf 'report.html\nreport.json\nrequests.csv\ntrace.json')" ] || fail "same/ holds $(ls same)"
}
case_write_report_identical_across_reruns() {
  # report.json used to differ in sim.wall_s between two identical runs: the file a user diffs for
  # drift. The wall time is printed instead.
  scenario s.json "$SMALL_WORKLOAD"
  expect 0 "" -- run s.json --out a --quiet
  expect 0 "" "$WORK/summary" -- run s.json --out b
  cmp -s a/report.json b/report.json || fail "two runs of s.json wrote different report.json"
  grep -q "simulated s in [0-9.]* wall s" "$WORK/summary" || fail "the summary does not print the wall time"
}
case_write_no_trace_removes_the_old_one() {
  # A run without trace.json into a folder that holds an earlier run's: the old trace goes.
  scenario s.json "$SMALL_WORKLOAD"
  expect 0 "" -- run s.json --out out --quiet
  expect 0 "" -- run s.json --out out --quiet --no-trace --no-html
  [ ! -e out/trace.json ] && [ ! -e out/report.html ] && [ -s out/requests.csv ] || fail "out/ holds $(ls out)"
}

# --- range: physical ranges of hardware and model files
hw_with() {  # hw_with FILE SED_EXPRESSION: the bundled L40S profile, edited
  sed "$2" "$ROOT/hwprofiles/l40s.json" >"$1"
  grep -q "$3" "$1" || fail "the edit did not apply"
}
case_range_hw_bandwidth_tiny() {
  hw_with hw.json 's/"hbm_bandwidth_bytes_per_s": [0-9.e+]*/"hbm_bandwidth_bytes_per_s": 1e-300/' '1e-300'
  HW=./hw.json scenario s.json "$SMALL_WORKLOAD"
  expect 2 "hw.json: hbm_bandwidth_bytes_per_s" -- run s.json --out out --quiet
}
case_range_hw_flops_tiny() {
  hw_with hw.json 's/"bf16": [0-9.e+]*/"bf16": 1e-300/' '1e-300'
  expect 2 "peak_flops_per_s.bf16" -- step --model llama-3-8b --hw ./hw.json --batch 1 --context 128
}
case_range_hw_launch_1e9() {
  hw_with hw.json 's/"kernel_launch_s": [0-9.e+-]*/"kernel_launch_s": 1e9/' '1e9'
  expect 2 "launch.kernel_launch_s" -- step --model llama-3-8b --hw ./hw.json --batch 1 --context 128
}
case_range_trace_arrival_1e12() {
  printf '{"arrival_s": %s, "prompt_tokens": 10, "output_tokens": 5}\n' 0 1e12 >t.jsonl
  scenario s.json "$(trace_workload t.jsonl jsonl)"
  expect 2 "t.jsonl: line 2" -- run s.json --out out --quiet
}
case_range_trace_time_scale_1e300() {
  printf '{"arrival_s": %s, "prompt_tokens": 10, "output_tokens": 5}\n' 0 1 >t.jsonl
  scenario s.json "$(trace_workload t.jsonl jsonl '' ', "time_scale": 1e300')"
  expect 2 "time_scale" -- run s.json --out out --quiet
}
case_range_slo_percentile_1_5() {
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "--slo: p" -- saturate s.json --slo ttft=1,p=1.5
}
case_range_empirical_weight_1e308() {
  # Weights of 1e308 passed (the documented range is [0, 1e300]) and summed to inf:
  # batch.saturation_context_tokens = -9.2e18.
  scenario s.json "${SMALL_WORKLOAD/\"impl\": \"uniform\", \"min_tokens\": 32, \"max_tokens\": 1024/\"impl\": \"empirical\", \"tokens\": [100, 200], \"weights\": [1e308, 1e308]}"
  grep -q 1e308 s.json || fail "the edit did not apply"
  expect 2 "s.json: workload.prompt_tokens.weights: [0] must be a number in [0, 1e+300]" -- run s.json --out out --quiet
  sed -i 's/1e308/1e300/g' s.json
  expect 0 "" -- run s.json --out out --quiet
  grep -q '"saturation_context_tokens": 2[0-9][0-9]\.0' out/report.json || fail "saturation_context_tokens is not in [200, 300)"
}
case_range_priority_weight_1e308() {
  # Same as the empirical weights: no documented range, 1e308 summed to inf and NaN class frequencies.
  scenario s.json "${SMALL_WORKLOAD/\"num_requests\": 300,/\"num_requests\": 300, \"priority_class_weights\": [1e308, 1e308],}"
  grep -q 1e308 s.json || fail "the edit did not apply"
  expect 2 "s.json: workload.priority_class_weights: must be an array of 1 to 16 numbers in (0, 1e+300], got 1e+308" -- run s.json --out out --quiet
}

# --- merge: partial files are checked like scenarios (types, ranges, the file and key named)
shards() {  # shards: sweep s.json over 3 seeds in 2 shards, p0.json and p1.json
  scenario s.json "$SMALL_WORKLOAD"
  expect 0 "" -- sweep s.json --grid seed=1,2,3 --shard 0/2 --partial p0.json
  expect 0 "" -- sweep s.json --grid seed=1,2,3 --shard 1/2 --partial p1.json
}
case_range_merge_negative_completed() {
  # -1e300 completed requests used to be printed in the merged table.
  shards
  sed -i 's/\["requests.completed", *[0-9.e+]*\]/["requests.completed", -1e300]/' p0.json
  grep -q -- '-1e300' p0.json || fail "the edit did not apply"
  expect 2 "p0.json: results[0][1][1][" -- merge p0.json p1.json
  grep -qF "requests.completed: must be a number in [0, 1e+18], got -1e+300" "$WORK/stderr" || fail "does not name the metric and its range"
}
case_range_merge_nan_metric() {
  # "nan" used to be printed as empty cells.
  shards
  sed -i 's/\["latency.ttft_s.p99", *[0-9.e+-]*\]/["latency.ttft_s.p99", "nan"]/' p0.json
  grep -q '"nan"' p0.json || fail "the edit did not apply"
  expect 2 'latency.ttft_s.p99: must be a number in [0, 1e+18], got "nan"' -- merge p0.json p1.json
}
case_raw_merge_result_not_an_array() {
  # A result that is a string, {} or null used to reach the user as nlohmann text naming no file.
  scenario s.json "$SMALL_WORKLOAD"
  expect 0 "" -- sweep s.json --grid seed=1,2 --shard 0/2 --partial p0.json
  expect 0 "" -- sweep s.json --grid seed=1,2 --shard 1/2 --partial p1.json
  local v
  for v in '"x"' '{}' 'null'; do
    sed "s/\"results\":\[\[0,.*\]\],\"servesim_partial\"/\"results\":[[0,$v]],\"servesim_partial\"/" p0.json >bad.json
    grep -qF "[[0,$v]]" bad.json || fail "the edit did not apply"
    expect 2 "bad.json: results[0][1]: must be an array of 2 items (a seed and its metrics)" -- merge bad.json p1.json
  done
}
case_msg_merge_recorded_args() {
  # Arguments recorded by the shards that no longer parse used to name no partial file.
  shards
  sed -i 's/"seed=1,2,3"\]/"seed=1,2,3", "--replications", "0"]/' p0.json p1.json
  grep -q '"--replications", "0"' p0.json || fail "the edit did not apply"
  expect 2 "p0.json: args: \`servesim sweep s.json --grid \"seed=1,2,3\" --replications 0\` (as the shards recorded it): --replications: must be in [1, 1000], got 0" -- merge p0.json p1.json
}

# --- raw: library and invariant messages turned into one line naming file and key
case_raw_json_number_overflow() {
  scenario s.json "${SMALL_WORKLOAD/\"rate_per_s\": 6/\"rate_per_s\": 1e400}"
  expect 2 "s.json: invalid JSON" -- run s.json --out out --quiet
}
case_raw_set_number_overflow() {
  # A regression: exit 70 with nlohmann's "number overflow" text (exit 2 before).
  expect 2 "default.json: workload.arrival.rate_per_s: --set: the number in '1e400' is out of range" -- \
    run "$ROOT/scenarios/default.json" --set workload.arrival.rate_per_s=1e400 --out out --quiet
  expect 2 "default.json: workload.arrival: --set: the number in" -- \
    run "$ROOT/scenarios/default.json" --set 'workload.arrival={"impl": "poisson", "rate_per_s": -1e999}' --out out --quiet
  # A name key takes the text as written: 1e400 is a name, not a number.
  expect 0 "" -- run "$ROOT/scenarios/default.json" --set name=1e400 --set workload.num_requests=50 --out out --quiet
  grep -q '"name": "1e400"' out/report.json || fail "the name is not 1e400"
}
case_raw_scenario_is_a_directory() {
  mkdir d
  expect 2 "d: is a directory" -- run d --out out --quiet
}
case_raw_integer_2pow63() {
  scenario s.json "${SMALL_WORKLOAD/\"num_requests\": 300/\"num_requests\": 9223372036854775808}"
  expect 2 "workload.num_requests: must be at most 9223372036854775807" -- run s.json --out out --quiet
}

# --- msg: the message names the right thing
case_msg_model_is_a_directory() {
  mkdir m
  expect 2 "is a directory" -- step --model ./m/ --hw h100-sxm --batch 1 --context 16
}
case_msg_hardware_is_a_device() {
  expect 2 "not a regular file: /dev/null" -- step --model llama-3-8b --hw /dev/null --batch 1 --context 16
}
case_msg_slo_unknown_unit() {
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "--slo: ttft" -- run s.json --out out --quiet --slo ttft=1ns
}
case_msg_null_value() {
  scenario s.json "${SMALL_WORKLOAD/\"num_requests\": 300/\"num_requests\": null}"
  expect 2 "workload.num_requests" -- run s.json --out out --quiet
  ! grep -q "null null" "$WORK/stderr" || fail "says 'null null'"
}
case_msg_flag_value_not_a_number() {
  # cxxopts' own message ("Argument 'abc' failed to parse") names the value, not the flag.
  expect 2 "servesim plan: --rate: " -- plan --model llama-3-8b --rate abc --slo ttft=1s
  expect 2 "servesim run: --replications: " -- run s.json --replications=1e3
}
case_msg_plan_rate_names_the_flag() {
  # Used to blame the bundled scenario: "plan-chat.json: workload.arrival.rate_per_s: must be <= 1e9".
  expect 2 "servesim plan: --rate: must be in (0, 1000000000], got 1e+308" -- plan --model llama-3-8b --rate 1e308 --slo ttft=1s
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "--load-profile: duration: must be in [0, 32000000], got 1e+300" -- run s.json --out out --quiet --load-profile "rps=5, duration=1e300"
}
case_msg_flag_errors_in_our_words() {
  # cxxopts' own text ("Option 'replicatons' does not exist", "Argument '1e3' failed to parse")
  # named values, not flags: each is said as the flag and what it wants.
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "servesim run: --replicatons: unknown flag; did you mean --replications? (see --help)" -- run s.json --replicatons 3
  expect 2 "servesim run: --replications: must be a whole number, got '1e3'" -- run s.json --replications=1e3
  expect 2 "servesim run: --quiet: takes no value, got 'x'" -- run s.json --quiet=x
  expect 2 "servesim run: --out: needs a value" -- run s.json --out
  ! grep -q "Argument\|Option" "$WORK/stderr" || fail "cxxopts' wording"
}
case_msg_hf_config_without_model_type() {
  echo '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32}' >config.json
  expect 2 "config.json: model_type" -- step --model ./config.json --hw h100-sxm --batch 1 --context 16
}
case_msg_hf_config_names_hf_keys() {
  # Errors named the model card's keys (num_kv_heads, moe.experts_per_token), not the config's.
  local mixtral='"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 32768, "num_local_experts": 8'
  echo "{ $mixtral, \"num_key_value_heads\": 8, \"num_experts_per_tok\": 9 }" >m.json
  expect 2 "m.json: num_experts_per_tok: must be in [1, num_local_experts 8], got 9" -- step --model ./m.json --hw h100-sxm --batch 1 --context 16
  echo "{ $mixtral, \"num_key_value_heads\": 5, \"num_experts_per_tok\": 2 }" >m.json
  expect 2 "m.json: num_key_value_heads: must divide num_attention_heads (32), got 5" -- step --model ./m.json --hw h100-sxm --batch 1 --context 16
  echo '{"model_type": "gemma3", "text_config": {"hidden_size": 2560, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 10240, "layer_types": ["sliding_attention",
    "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]}}' >g.json
  expect 2 "g.json: text_config.layer_types: makes 5 layers windowed, more than text_config.num_hidden_layers (4)" -- \
    step --model ./g.json --hw h100-sxm --batch 1 --context 16
}
case_msg_copied_profile_without_tables() {
  # Used to say "./tables/h200-sxm.json: file not found", naming neither the profile nor its key.
  cp "$ROOT/hwprofiles/h200-sxm.json" hw.json
  expect 2 "hw.json: tables: names tables/h200-sxm.json, which is not beside this profile" -- step --model llama-3-8b --hw ./hw.json --batch 1 --context 16
  grep -qF "(the bundled one is hwprofiles/tables/h200-sxm.json)" "$WORK/stderr" || fail "does not say where the bundled tables are"
  mkdir tables && cp "$ROOT/hwprofiles/tables/h200-sxm.json" tables/
  expect 0 "" -- step --model llama-3-8b --hw ./hw.json --batch 1 --context 16
}
case_msg_csv_with_byte_order_mark() {
  # Accepted: a UTF-8 byte-order mark (Excel's CSV export) is not part of the first column's name.
  printf '\xef\xbb\xbfTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,100,10\n2023-11-16 18:15:47.0,200,20\n' >azure.csv
  scenario s.json "$(trace_workload azure.csv azure)"
  expect 0 "" -- run s.json --out out --quiet
  [ -s out/report.json ] || fail "no report.json"
}
case_msg_calibrate_grouped_gemm_bad_runs() {
  expect 2 "RUN.json: required" -- calibrate grouped-gemm --hw h200-sxm --fit-models mixtral-8x7b
  echo '{"schema": "servesim-independent/1", "sections": {}}' >run.json
  expect 2 "run.json: sections.moe" -- calibrate grouped-gemm run.json --hw h200-sxm --fit-models mixtral-8x7b
  expect 2 "missing.json" -- calibrate grouped-gemm missing.json run.json --hw h200-sxm --fit-models mixtral-8x7b
  echo '{"schema": "servesim-independent/1", "sections": {"moe_a": {"grouped": []}, "moe_b": {"grouped": []}}}' >two.json
  expect 2 "two.json: sections.moe_b: a second moe_* section" -- calibrate grouped-gemm two.json --hw h200-sxm --fit-models mixtral-8x7b
  expect 2 "--fixed-models: --fixed-from and --fixed-models go together" -- calibrate grouped-gemm run.json --hw h200-sxm \
    --fit-models mixtral-8x7b --fixed-from run.json
}
case_empty_saturate_one_request() {
  # One request meets any SLO at any rate: there is no saturation rate to report (it used to print
  # the search's cap, about 1e6 req/s, and exit 0).
  scenario s.json "${SMALL_WORKLOAD/\"num_requests\": 300/\"num_requests\": 1}"
  # (From 1e5 req/s with one replication: a few probes, not 21 x 3, so the sanitizer build stays fast.)
  expect 2 "s.json: workload.num_requests: every probed rate up to" -- saturate s.json --slo ttft=1s --start-rate 100000 --replications 1
}

# --- calibration data (calib/raw_schema.hpp): each record checked, errors name the input's key
raw_with() {  # raw_with FILE SED_EXPRESSION CHECK: the committed H200 raw.json, edited
  sed "$2" "$ROOT/calibrate/results/h200/raw.json" >"$1"
  grep -q "$3" "$1" || fail "the edit did not apply"
}
case_range_calibrate_gemm_time() {
  # GEMM times of 0, negative or 1e300 used to fit a profile (exit 0, "median |error| inf%").
  for t in 0 -1e-05 1e300; do
    raw_with raw.json "258s/\"time_s\": 1.59912733e-05/\"time_s\": $t/" "\"time_s\": $t,"
    expect 2 "raw.json: gemm[0].time_s: must be in (0, 1000], got" -- calibrate fit raw.json --name h200-sxm -o out/h.json
  done
  [ ! -e out ] || fail "a refused fit wrote out/"
}
case_raw_calibrate_without_launch() {
  # Used to exit 70 with nlohmann's "key 'launch' not found".
  raw_with raw.json '/"launch": {/,/^ },/d' '"contention"'
  expect 2 "raw.json: launch: missing required key" -- calibrate fit raw.json --name h200-sxm -o out/h.json
}
case_msg_calibrate_names_the_input_row() {
  # Errors named derived tables ("h200-sxm (fitted): tables.efficiency.memory_bw_frac_by_bytes[0]")
  # or were raw library text (a dtype that is a number).
  raw_with raw.json '0,/"bytes": 24576,/s//"bytes": -5,/' '"bytes": -5,'
  expect 2 "raw.json: elementwise[0].bytes: must be in [1, 1e+13], got -5" -- calibrate fit raw.json --name h200-sxm -o out/h.json
  raw_with raw.json '0,/"dtype": "bf16",/s//"dtype": 5,/' '"dtype": 5,'
  expect 2 "raw.json: gemm[0].dtype: must be a string, got an integer 5" -- calibrate fit raw.json --name h200-sxm -o out/h.json
  raw_with raw.json '0,/"sm_count": 132,/s//"sm_count": "x",/' '"sm_count": "x",'
  expect 2 "raw.json: gpu.sm_count: must be an integer" -- calibrate fit raw.json --name h200-sxm -o out/h.json
  raw_with raw.json '0,/"alone_s": \[/s//"alone_s": [0, /' '"alone_s": \[0, '
  expect 2 "raw.json: contention[0].alone_s: [0] must be in (0, 1000], got 0" -- calibrate fit raw.json --name h200-sxm -o out/h.json
}
case_msg_calibrate_kv_section_checked() {
  # The optional attention_decode_kv section (quantized KV caches) is checked like the others.
  raw_with raw.json '0,/"contention": \[/s//"attention_decode_kv": [{"kv_dtype": "int3"}], "contention": [/' '"int3"'
  expect 2 "raw.json: attention_decode_kv[0].kv_dtype: must be one of bf16, fp8_e4m3, int8, int4, got 'int3'" -- calibrate fit raw.json --name h200-sxm -o out/h.json
}

# --- validate --suite published --print-scenario: one row, named
case_msg_validate_print_scenario() {
  expect 2 "servesim validate: --print-scenario: needs --only ID naming one published row" -- validate --suite published --print-scenario
  expect 2 "rows match 'qwen3-235b-h100'" -- validate --suite published --only qwen3-235b-h100 --print-scenario
  expect 2 "has an id containing 'no-such-row'" -- validate --suite published --only no-such-row --print-scenario
  expect 2 "servesim validate: --print-scenario: only read with --suite published" -- validate --suite quant --print-scenario
}
# --- benchmark result files (validate --against, calibrate engine: validate/bench_result.cpp)
# vllm_result FILE [KEY_VALUES]: a vllm bench serve --save-result file, KEY_VALUES ("k": v, ...) over the defaults
vllm_result() {
  cat >"$1" <<JSON
{ "model_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 20, "request_rate": "inf", "max_concurrency": 4,
  "completed": 20, "total_input_tokens": 2560, "total_output_tokens": 640, "median_ttft_ms": 30.0, "median_tpot_ms": 7.0 ${2:+, $2} }
JSON
}
case_msg_against_missing_key() {
  vllm_result r.json
  sed -i 's/"completed": 20, //' r.json
  expect 2 "r.json: completed: missing required key" -- validate --against r.json --set hardware=h100-sxm
}
case_msg_against_wrong_type() {
  vllm_result r.json
  sed -i 's/"request_rate": "inf"/"request_rate": "fast"/' r.json
  expect 2 "r.json: request_rate: must be a number > 0 or \"inf\"" -- validate --against r.json --set hardware=h100-sxm
  vllm_result r.json '"median_ttft_ms": "30 ms"'
  expect 2 "r.json: median_ttft_ms: must be a number, got a string" -- validate --against r.json --set hardware=h100-sxm
}
case_range_against_negative_rate() {
  vllm_result r.json
  sed -i 's/"request_rate": "inf"/"request_rate": -2/' r.json
  expect 2 "r.json: request_rate: must be > 0, got -2" -- validate --against r.json --set hardware=h100-sxm
  expect 2 "r.json: request_rate: must be > 0, got -2" -- calibrate engine r.json --set hardware=h100-sxm -o out/p.json
  [ ! -e out ] || fail "a refused fit wrote out/"
}
case_msg_against_unknown_format() {
  echo '{"foo": 1}' >r.json
  expect 2 "r.json: (top level): not a result file servesim reads" -- validate --against r.json
  vllm_result r.json
  expect 2 "--format: must be vllm-bench, inference-perf or genai-perf, got 'csv'" -- validate --against r.json --format csv
  expect 2 "r.json: load_summary: missing required key" -- validate --against r.json --format inference-perf --set hardware=h100-sxm
}
case_msg_against_needs_gpu_and_model() {
  vllm_result r.json
  expect 2 "r.json: hardware: the file does not say which GPU served it" -- validate --against r.json
  vllm_result r.json '"model_id": "acme/NotAModel-3B"'
  expect 2 "r.json: model_id: no bundled card matches 'acme/NotAModel-3B'" -- validate --against r.json --set hardware=h100-sxm
}
case_hang_against_billion_requests() {
  vllm_result r.json '"num_prompts": 1000000000'
  expect 2 "--no-work-limit" -- validate --against r.json --set hardware=h100-sxm
  expect 2 "--no-work-limit" -- calibrate engine r.json --set hardware=h100-sxm -o out/p.json
}
case_range_against_events_per_token() {
  vllm_result r.json
  expect 2 "--events-per-token: must be in [0, 2], got 3" -- validate --against r.json --events-per-token 3
}

# --- stream: special files as inputs (core/input_file.hpp)
case_stream_dev_zero_as_trace() {
  # /dev/zero as a jsonl trace used to grow to 4-6 GB in 20 s: it is read through the 1 GiB limit.
  scenario s.json "$(trace_workload /dev/zero jsonl)"
  expect 2 "/dev/zero: a stream longer than the 1 GiB input limit (raise it with --max-input-bytes)" -- run s.json --out out --quiet
}
case_stream_endless_pipe() {
  scenario s.json "$(trace_workload /dev/stdin splitwise)"
  { echo arrived_at,num_prefill_tokens,num_decode_tokens; yes 0,10,5; } |
    expect 2 "/dev/stdin: a stream longer than the 1 MiB input limit" -- run s.json --out out --quiet --max-input-bytes 1M
}
case_stream_fifo_without_writer() {
  # Used to block forever in open().
  mkfifo fifo
  scenario s.json "$(trace_workload fifo jsonl)"
  expect 2 "fifo: is a FIFO that nothing opened for writing within 5 s" -- run s.json --out out --quiet
}
case_stream_under_the_limit() {
  # A stream is read once and kept: the trace is read for the saturation batch, then for the
  # requests, then for each replication (runs 2 and 3 resample it: a trace's replications need 3).
  printf '{"arrival_s": %s, "prompt_tokens": 100, "output_tokens": 20}\n' 0 0.5 1 1.5 2 >t.jsonl
  scenario s.json "$(trace_workload /dev/stdin jsonl)"
  cat t.jsonl | expect 0 "" -- run s.json --out out --quiet --replications 3
  grep -q '"completed": 5' out/report.json || fail "the run from a stream did not complete its 5 requests"
  scenario s2.json "$(trace_workload t.jsonl jsonl)"
  expect 0 "" -- run <(cat s2.json) --out out2 --quiet
}
case_stream_json_past_the_limit() {
  # A document held whole in memory: a regular file past the limit is refused before it is read.
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "KiB, more than the 1 KiB input limit (raise it with --max-input-bytes)" -- run s.json --out out --quiet --max-input-bytes 1K
  expect 2 "--max-input-bytes: must be a size in [1, 1T]" -- run s.json --out out --quiet --max-input-bytes 2T
}
case_stream_cr_line_endings() {
  # Accepted: CR-only line ends (a classic-Mac CSV export) used to read as one line, "header lacks column".
  printf 'arrived_at,num_prefill_tokens,num_decode_tokens\r0,10,5\r1,10,5\r' >cr.csv
  scenario s.json "$(trace_workload cr.csv splitwise)"
  expect 0 "" -- run s.json --out out --quiet
  [ "$(wc -l <out/requests.csv)" = 3 ] || fail "requests.csv does not hold the trace's 2 rows"
}
case_stream_nul_byte_in_a_field() {
  # The NUL used to cut the message short ("'10"): control bytes are written as \xNN.
  printf 'arrived_at,num_prefill_tokens,num_decode_tokens\n0,10\0,5\n' >nul.csv
  scenario s.json "$(trace_workload nul.csv splitwise)"
  expect 2 "nul.csv: line 2: num_prefill_tokens: not an integer: '10\\x00'" -- run s.json --out out --quiet
}

# --- crash: a signal where a message belongs
case_crash_truncated_mpi_module() {
  # A module cut short used to be mapped by dlopen() and fault (SIGBUS, exit 135).
  scenario s.json "$SMALL_WORKLOAD"
  local module
  module="$(dirname "$SERVESIM")/libservesim_mpi.so"
  if [ ! -f "$module" ]; then
    expect 2 "built without MPI" -- sweep s.json --grid seed=1,2 --mpi
    return
  fi
  head -c 4000 "$module" >cut.so
  SERVESIM_MPI_MODULE=$PWD/cut.so expect 2 "cut.so: truncated: its headers describe" -- sweep s.json --grid seed=1,2 --mpi
}

# --- plan --html and --load-csv (saturate, sweep, plan): an unwritable file, a grid without the rate
PLAN_SMALL=(plan --model llama-2-7b --rate 4 --slo ttft=2s,tpot=100ms --hw a100-80gb-sxm --tp 1 --replications 1 --tolerance 0.1)
case_write_plan_html_to_full_disk() {
  expect 2 "/dev/full" -- "${PLAN_SMALL[@]}" --workload "$ROOT/tests/dist/small.json" --html /dev/full
}
case_write_plan_load_csv_to_full_disk() {
  expect 2 "/dev/full" -- "${PLAN_SMALL[@]}" --workload "$ROOT/tests/dist/small.json" --load-csv /dev/full
}
case_write_plan_html_into_a_file() {
  echo x >plain
  expect 2 "plain/plan.html" -- "${PLAN_SMALL[@]}" --workload "$ROOT/tests/dist/small.json" --html plain/plan.html
}
case_write_saturate_load_csv_to_full_disk() {
  expect 2 "/dev/full" -- saturate "$ROOT/tests/dist/small.json" --slo ttft=2s --replications 1 --tolerance 0.2 --load-csv /dev/full
}
case_msg_plan_html_without_a_file() {
  expect 2 "html" -- "${PLAN_SMALL[@]}" --html
}
case_msg_sweep_load_csv_grid_names_the_flag() {
  scenario s.json "$SMALL_WORKLOAD"
  expect 2 "servesim sweep: --load-csv: writes latency against the arrival rate" -- sweep s.json --grid engine.max_num_seqs=8,16 --load-csv x.csv
  [ ! -e x.csv ] || fail "a refused sweep wrote x.csv"
}
