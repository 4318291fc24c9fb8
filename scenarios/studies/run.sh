#!/bin/sh
# Studies of issue 6: each line is one command writing a markdown table to docs/studies/
# (run from the repository root after a build). Studies 3, 4, 5 and 7 wait for engine profiles,
# quantization and contiguous KV (issues 4, 5, 9); see docs/studies/README.md.
set -e
B=${SERVESIM:-build/servesim}
S=scenarios/studies
D=docs/studies
M="latency.tpot_s.p50,throughput.output_tokens_per_s,gpu.hbm_bw_util_frac,batch.mean_size,kv_cache.peak_used_frac"
$B sweep $S/01_bandwidth_bound_decode.json --grid model=llama-2-7b,llama-3-8b --grid hardware=a10,a100-80gb-sxm --metrics $M --md $D/01_bandwidth_bound_decode.md > /dev/null
$B roofline --model llama-2-7b --hw a100-80gb-sxm --batch 1 --context 2048 --md $D/02_roofline_gap_batch1.md > /dev/null
$B roofline --model llama-2-7b --hw a100-80gb-sxm --batch 64 --context 1024 --md $D/02_roofline_gap_batch64.md > /dev/null
$B sweep $S/06_long_context.json --grid model=mistral-7b,qwen2-7b,$S/models/llama-3.1-8b/config.json --grid workload.prompt_tokens.value_tokens=8192,16384,32000,65536,130000 --metrics requests.completed,requests.rejected,kv_cache.peak_used_frac,latency.ttft_s.p50,latency.tpot_s.p50,gpu.hbm_bw_util_frac --md $D/06_long_context.md > /dev/null
$B saturate $S/08_saturation_heads.json --slo ttft=1s,tpot=100ms,p=0.99 --md $D/08_saturation_32_heads.md > /dev/null
$B saturate $S/08_saturation_heads.json --set model=$S/models/llama-2-7b-64h/config.json --slo ttft=1s,tpot=100ms,p=0.99 --md $D/08_saturation_64_heads.md > /dev/null
$B sweep $S/09_hardware_matrix.json --grid hardware=a100-80gb-sxm,h100-sxm,l40s,h200-sxm --metrics throughput.output_tokens_per_s,throughput.requests_per_s,latency.ttft_s.p50,latency.ttft_s.p99,latency.tpot_s.p50,kv_cache.peak_used_frac,gpu.busy_frac --md $D/09_hardware_matrix.md > /dev/null
python3 scripts/speculative_study.py $B > $D/10_speculative.md
echo "studies written to $D/"
