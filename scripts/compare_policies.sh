#!/usr/bin/env bash
# Runs one scenario under every batching policy and a few KV settings and prints a Markdown table
# (docs/policies.md was made with it; scripts/doc_examples.py reruns it and diffs the table). Needs
# build/servesim (or $SERVESIM) and jq.
# Usage: scripts/compare_policies.sh [SCENARIO.json] [extra --set arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-scenarios/policies.json}
shift || true
bin=${SERVESIM:-build/servesim}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

variants=(
  "static (batch 16, timeout 0.1 s)|engine.scheduler={\"impl\":\"static\",\"batch_size\":16,\"batch_timeout_s\":0.1}"
  "dynamic (max batch 16, delay 10 ms)|engine.scheduler={\"impl\":\"dynamic\",\"max_batch_size\":16,\"max_queue_delay_s\":0.01}"
  "continuous|engine.scheduler.impl=continuous"
  "continuous, contiguous max_model_len|engine.scheduler.impl=continuous engine.kv_reservation=contiguous"
  "continuous, swap preemption|engine.scheduler.impl=continuous engine.preemption_mode=swap"
  "continuous, prefix caching|engine.scheduler.impl=continuous engine.enable_prefix_caching=true"
  "continuous, priority (2 classes), queue limit 64|engine.scheduler={\"impl\":\"continuous\",\"scheduling_policy\":\"priority\",\"max_queue_size\":64} workload.priority_class_weights=[1,3]"
  "chunked-prefill (512-token budget)|engine.scheduler.impl=chunked-prefill engine.max_num_batched_tokens=512"
  "chunked-prefill, 512 budget, prefix caching|engine.scheduler.impl=chunked-prefill engine.max_num_batched_tokens=512 engine.enable_prefix_caching=true"
  "token-level (token reservation)|engine.scheduler.impl=token-level engine.kv_reservation=token"
)

echo "| policy | done | rej | out tok/s | TTFT p50 s | TTFT p99 s | TPOT p50 s | queue p99 s | E2E p99 s | batch | KV peak | frag | resv waste | pad waste | preempt | recomp tok | swap GB | prefix hit |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for v in "${variants[@]}"; do
  name=${v%%|*}
  sets=()
  for s in ${v#*|}; do sets+=(--set "$s"); done
  "$bin" run "$scenario" --quiet --out "$out" "${sets[@]}" "$@"
  jq -r --arg name "$name" '
    def f(n): (. * pow(10; n) | round) / pow(10; n);
    "| \($name) | \(.requests.completed) | \(.requests.rejected) | \(.throughput.output_tokens_per_s | f(0)) | \(.latency.ttft_s.p50 | f(3)) | \(.latency.ttft_s.p99 | f(3)) | \(.latency.tpot_s.p50 | f(4)) | \(.latency.queue_s.p99 | f(3)) | \(.latency.e2e_s.p99 | f(2)) | \(.batch.mean_size | f(1)) | \(.kv_cache.peak_used_frac | f(3)) | \(.kv_cache.internal_fragmentation_frac | f(3)) | \(.kv_cache.reservation_waste_frac | f(3)) | \(.batch.padding_waste_frac | f(3)) | \(.requests.preemptions) | \(.requests.recomputed_tokens) | \((.kv_cache.swap_out_bytes + .kv_cache.swap_in_bytes) / 1e9 | f(2)) | \(.kv_cache.prefix_hit_ratio | f(3)) |"
  ' "$out/report.json"
done
jq -r '"\nsaturation batch size (cost model, context \(.batch.saturation_context_tokens) tokens): \(.batch.saturation_size)"' "$out/report.json"
