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
  std::optional<EngineProfile> engine;  // --engine; without it: graphs for decode, no host overhead
  ParallelConfig parallel;              // --tp, --pp, --micro-batches: one replica of tp x pp GPUs
};

// --quant NAME (bf16|fp16|fp8|int8|w8a16|w4a16-gptq|w4a16-awq|nvfp4|fp4|mxfp4) on a base dtype; InputError if unknown.
void apply_quant_name(const std::string& name, Precision& precision, const std::string& cmd, const std::string& key);

// `servesim op gemm`: one GEMM C[m,n] = A[m,k] W[k,n] in the named dtype (bf16, fp16, fp8, int8,
// w8a16, w4a16 = w4a16-gptq, w4a16-awq; weight-only schemes run on bf16 activations), timed by
// the cost model. InputError (naming `cmd`'s flags) on a bad dtype, size or group size.
struct GemmQuery {
  Op op;
  Dtype dtype = Dtype::bf16;  // the GEMM's own dtype (bf16 for weight-only schemes)
  KernelTime time;
};
GemmQuery time_gemm(const HwProfile& hw, const std::string& dtype_text, std::int64_t m, std::int64_t n, std::int64_t k,
                    std::int64_t group_size, const std::string& cmd);

struct TimedStep {
  std::vector<Op> ops;
  StepTime step;
  bool cuda_graphs = false;
  std::int64_t padded_batch = 0;  // batch the kernels ran at (CUDA graph padding)
};

// One decode step of `batch` sequences with `context` tokens each in the KV cache.
TimedStep time_decode(const StepQuery& q, std::int64_t batch, std::int64_t context, bool force_eager);
TimedStep time_prefill(const StepQuery& q, std::int64_t batch, std::int64_t prompt, std::int64_t context);
// Most sequences of `context_tokens` the KV cache of one replica holds (vLLM accounting,
// gpu_memory_utilization 0.9, 1 GiB runtime), divided among `instances` sharing each GPU.
std::int64_t max_batch(const StepQuery& q, std::int64_t context_tokens, std::int64_t instances = 1);

}  // namespace servesim
