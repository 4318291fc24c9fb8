#!/bin/sh
# Studies of issue 6: each line is one command writing a markdown table to docs/studies/
# (run from the repository root after a build); see docs/studies/README.md. scripts/doc_examples.py
# (ctest doc_examples) reruns every --md table and fails on a stale one.
set -e
B=${SERVESIM:-build/servesim}
S=scenarios/studies
D=docs/studies
M="latency.tpot_s.p50,throughput.output_tokens_per_s,gpu.hbm_bw_util_frac,batch.mean_size,kv_cache.peak_used_frac"
$B sweep $S/01_bandwidth_bound_decode.json --grid model=llama-2-7b,llama-3-8b --grid hardware=a10,a100-80gb-sxm --metrics $M --md $D/01_bandwidth_bound_decode.md > /dev/null
$B roofline --model llama-2-7b --hw a100-80gb-sxm --batch 1 --context 2048 --md $D/02_roofline_gap_batch1.md > /dev/null
$B roofline --model llama-2-7b --hw a100-80gb-sxm --batch 64 --context 1024 --md $D/02_roofline_gap_batch64.md > /dev/null
$B sweep $S/03_kernels_per_token.json --grid model=qwen2-7b,chatglm3-6b,phi-3-mini --grid engine.profile=hf-transformers,torch-eager,torch-cudagraph,vllm,tensorrt-llm --metrics gpu.kernels_per_token,gpu.launch_time_frac,gpu.launch_bound_frac,latency.tpot_s.p50 --md $D/03_kernels_per_token.md > /dev/null
$B sweep $S/04_quantization_falloff.json --grid hardware=a100-80gb-sxm,h100-sxm --grid quantization.method=none,w4a16-gptq,w4a16-awq,fp8 --grid engine.max_num_seqs=1,16 --metrics memory.weight_bytes,latency.ttft_s.p50,latency.tpot_s.p50,throughput.output_tokens_per_s --md $D/04_quantization_falloff.md > /dev/null
$B sweep $S/05_instances_per_gpu.json --grid engine.profile=vllm,sglang,tensorrt-llm,torch-cudagraph --grid parallel.instances_per_gpu=1,2,4 --metrics throughput.output_tokens_per_s,gpu.contention_frac,kv_cache.capacity_tokens,latency.tpot_s.p50,latency.e2e_s.p50 --md $D/05_instances_per_gpu.md > /dev/null
$B sweep $S/06_long_context.json --grid model=mistral-7b,qwen2-7b --grid workload.prompt_tokens.value_tokens=8192,16384,32000 --metrics requests.completed,requests.rejected,kv_cache.peak_used_frac,latency.ttft_s.p50,latency.tpot_s.p50,gpu.hbm_bw_util_frac --md $D/06_long_context_32k.md > /dev/null
$B sweep $S/06_long_context.json --set model=$S/models/llama-3.1-8b/config.json --grid workload.prompt_tokens.value_tokens=8192,16384,32000,65536,130000 --metrics requests.completed,requests.rejected,kv_cache.peak_used_frac,latency.ttft_s.p50,latency.tpot_s.p50,gpu.hbm_bw_util_frac --md $D/06_long_context_128k.md > /dev/null
$B sweep $S/07_kv_preallocation.json --grid engine.kv_reservation=paged,contiguous --grid engine.max_num_seqs=1,2,3,4 --metrics kv_cache.reservation_waste_frac,kv_cache.internal_fragmentation_frac,kv_cache.peak_used_frac,batch.mean_size,throughput.output_tokens_per_s --md $D/07_kv_preallocation.md > /dev/null
$B saturate $S/08_saturation_heads.json --slo ttft=1s,tpot=100ms,p=0.99 --md $D/08_saturation_32_heads.md > /dev/null
$B saturate $S/08_saturation_heads.json --set model=$S/models/llama-2-7b-64h/config.json --slo ttft=1s,tpot=100ms,p=0.99 --md $D/08_saturation_64_heads.md > /dev/null
$B sweep $S/09_hardware_matrix.json --grid hardware=a100-80gb-sxm,h100-sxm,l40s,h200-sxm --metrics throughput.output_tokens_per_s,throughput.requests_per_s,latency.ttft_s.p50,latency.ttft_s.p99,latency.tpot_s.p50,kv_cache.peak_used_frac,gpu.busy_frac --md $D/09_hardware_matrix.md > /dev/null
python3 scripts/speculative_study.py $B > $D/10_speculative.md
echo "studies written to $D/"
