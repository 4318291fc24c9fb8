// What `step`, `quant-table`, `contention`, `op` and the public validation cases share: the
// model/GPU/precision/engine a what-if question is asked about, and one step's time.
// (sim/cli/query_options reads a StepQuery from the command line.)
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/engine_profile.hpp"
#include "sim/config/scenario.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

struct StepQuery {
  ModelSpec model;
  HwProfile hw;
  Precision precision;
  bool emulated = false;                // w8a8 format missing on this GPU
  std::optional<EngineProfile> engine;  // --engine; without it, launch_without_engine
  // Launch and host costs when there is no engine profile: CUDA graphs for decode and, by default,
  // no host work (kernel-level comparisons); `step` and `roofline` set the scenario defaults
  // (default_launch), so they time a step as `run` does.
  LaunchConfig launch_without_engine;
  ParallelConfig parallel;              // --tp, --pp, --micro-batches: one replica of tp x pp GPUs
};

// What a scenario without an engine profile runs with: CUDA graphs for decode and the default host
// overheads (engine.host_overhead_per_step_s and _per_seq_s).
LaunchConfig default_launch();

// --quant NAME (bf16|fp16|fp8|int8|w8a16|w4a16-gptq|w4a16-awq|nvfp4|fp4|mxfp4) on a base dtype; InputError if unknown.
void apply_quant_name(const std::string& name, Precision& precision, const std::string& cmd, const std::string& key);

// `servesim op gemm`: one GEMM C[m,n] = A[m,k] W[k,n] in the named dtype (bf16, fp16, fp8, int8,
// w8a16, w4a16 = w4a16-gptq, w4a16-awq; weight-only schemes run on bf16 activations), timed by
// the cost model. InputError (naming `cmd`'s flags) on a bad dtype, size or group size.
struct GemmQuery {
  Op op;
  Dtype dtype = Dtype::bf16;  // the GEMM's own dtype (bf16 for weight-only schemes)
  KernelTime time;
  // fp8/int8/fp4 on a GPU without those units: timed as `run` and `plan` run it, converting the
  // weights to 16 bits and then a 16-bit GEMM (slower than the 16-bit GEMM alone).
  bool emulated = false;
};
// `kernel` (auto_: servesim's generic choice): the engine kernel a quantized dtype runs on
// (QuantKernel; op gemm --kernel), which must run that scheme.
GemmQuery time_gemm(const HwProfile& hw, const std::string& dtype_text, std::int64_t m, std::int64_t n, std::int64_t k,
                    std::int64_t group_size, const std::string& cmd, QuantKernel kernel = QuantKernel::auto_);

struct TimedStep {
  std::vector<Op> ops;
  StepTime step;
  bool cuda_graphs = false;
  std::int64_t padded_batch = 0;  // batch the kernels ran at (CUDA graph padding)
};

// One decode step of `batch` sequences with `context` tokens each in the KV cache.
TimedStep time_decode(const StepQuery& q, std::int64_t batch, std::int64_t context, bool force_eager);
TimedStep time_prefill(const StepQuery& q, std::int64_t batch, std::int64_t prompt, std::int64_t context);
// One speculative verify pass: `batch` sequences with `context` tokens cached, each scoring its
// last token and k draft tokens (k + 1 query tokens, causal among themselves, all scored by the
// LM head). k = 0 is time_decode.
TimedStep time_verify(const StepQuery& q, std::int64_t batch, std::int64_t context, std::int64_t k);
// InputError naming `cmd`'s flag when one replica cannot run the step: the weights do not fit in
// GPU memory (--hw), or `batch` sequences of `tokens_per_seq` need more KV cache than is left
// after them (--batch). Same memory accounting as `run` (gpu_memory_utilization 0.9).
void check_step_fits(const StepQuery& q, std::int64_t batch, std::int64_t tokens_per_seq, const std::string& cmd);

// Most sequences of `context_tokens` the KV cache of one replica holds (vLLM accounting,
// gpu_memory_utilization 0.9, 1 GiB runtime), divided among `instances` sharing each GPU.
std::int64_t max_batch(const StepQuery& q, std::int64_t context_tokens, std::int64_t instances = 1);

}  // namespace servesim
