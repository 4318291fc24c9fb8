// Small memory-bound kernels of a Llama layer (residual add, RMSNorm, SiLU*mul, NeoX RoPE), bf16,
// over token counts 1..16384: gives servesim the fixed cost + bytes/s of the non-GEMM kernels,
// which dominate launch-bound small-batch decode.
#include "common.cuh"
#include "kernels.cuh"

#include <cmath>

namespace cal {

// Kernels (k_add, k_rmsnorm, k_silu_mul, k_rope) live in kernels.cuh, shared with
// reference/fused_ops.cu.

static unsigned ew_blocks(size_t n) {
  size_t b = (n + 255) / 256;
  return (unsigned)std::max<size_t>(1, std::min<size_t>(b, (size_t)device().sm_count * 16));
}

void run_elementwise(const Args& a) {
  const int max_tokens = 16384, max_hidden = 8192, head_dim = 128, n_kv = 8, max_pos = 65536;
  // Per rotation copy the largest op needs 3 * T * H bf16 (silu_mul: 2H in + H out).
  const size_t max_set = (size_t)max_tokens * max_hidden * 2 * 3;
  const size_t arena = std::max<size_t>(max_set, 2 * kRotateBytes) + 4 * MiB;
  char* buf;
  CK(cudaMalloc(&buf, arena));
  fill_uniform_bf16((__nv_bfloat16*)buf, arena / 2, -1.f, 1.f, 11);
  __nv_bfloat16 *w, *cos_sin;
  int* pos;
  CK(cudaMalloc(&w, max_hidden * 2));
  CK(cudaMalloc(&cos_sin, (size_t)max_pos * head_dim * 2));
  CK(cudaMalloc(&pos, max_tokens * sizeof(int)));
  fill_uniform_bf16(w, max_hidden, 0.5f, 1.5f, 12);
  {
    // Real cos|sin table (theta 500000, Llama-3), so repeated in-place RoPE keeps values bounded.
    std::vector<__nv_bfloat16> cs((size_t)max_pos * head_dim);
    for (int p = 0; p < max_pos; ++p)
      for (int i = 0; i < head_dim / 2; ++i) {
        double ang = p * std::pow(500000.0, -2.0 * i / head_dim);
        cs[(size_t)p * head_dim + i] = __float2bfloat16((float)std::cos(ang));
        cs[(size_t)p * head_dim + head_dim / 2 + i] = __float2bfloat16((float)std::sin(ang));
      }
    CK(cudaMemcpy(cos_sin, cs.data(), cs.size() * 2, cudaMemcpyHostToDevice));
  }
  {
    std::vector<int> hp(max_tokens);
    for (int i = 0; i < max_tokens; ++i) hp[i] = (int)((i * 7919u) % max_pos);  // scattered positions
    CK(cudaMemcpy(pos, hp.data(), hp.size() * sizeof(int), cudaMemcpyHostToDevice));
  }
  CK(cudaDeviceSynchronize());
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  std::vector<int> token_list;
  for (int t = 1; t <= (a.quick ? 1024 : max_tokens); t *= 2) token_list.push_back(t);
  std::vector<std::string> rec;
  std::printf("%-9s %7s %6s %12s %10s %8s\n", "op", "tokens", "hidden", "bytes", "time_us", "GB/s");
  for (int hidden : {4096, 8192}) {
    const int hq = hidden / head_dim;
    for (int T : token_list) {
      const size_t th = (size_t)T * hidden;
      for (const char* opname : {"add", "rmsnorm", "silu_mul", "rope"}) {
        std::string op = opname;
        size_t set_bytes, bytes;
        std::function<void(cudaStream_t, char*)> f;
        if (op == "add") {
          set_bytes = th * 2 * 3;
          bytes = set_bytes;
          f = [=](cudaStream_t st, char* p) {
            size_t n8 = th / 8;
            k_add<<<ew_blocks(n8), 256, 0, st>>>((const uint4*)p, (const uint4*)(p + th * 2), (uint4*)(p + th * 4), n8);
          };
        } else if (op == "rmsnorm") {
          set_bytes = th * 2 * 2;
          bytes = set_bytes + (size_t)hidden * 2;
          f = [=](cudaStream_t st, char* p) {
            k_rmsnorm<256><<<T, 256, 0, st>>>((const uint4*)p, (const uint4*)w, (uint4*)(p + th * 2), hidden / 8, 1e-5f);
          };
        } else if (op == "silu_mul") {
          set_bytes = th * 2 * 3;
          bytes = set_bytes;
          f = [=](cudaStream_t st, char* p) {
            size_t n8 = th / 8;
            k_silu_mul<<<ew_blocks(n8), 256, 0, st>>>((const uint4*)p, (uint4*)(p + th * 4), hidden / 8, n8);
          };
        } else {
          const size_t qk = (size_t)T * (hq + n_kv) * head_dim;
          set_bytes = qk * 2;
          bytes = 2 * qk * 2 + (size_t)T * head_dim * 2 + (size_t)T * sizeof(int);
          f = [=](cudaStream_t st, char* p) {
            size_t total = (size_t)T * (hq + n_kv) * (head_dim / 16);
            k_rope<<<ew_blocks(total), 256, 0, st>>>((__nv_bfloat16*)p, (__nv_bfloat16*)(p + (size_t)T * hq * head_dim * 2),
                                                     cos_sin, pos, T, hq, n_kv, head_dim, (long long)hq * head_dim,
                                                     (long long)n_kv * head_dim);
          };
        }
        const size_t stride = round_up(set_bytes, 256);
        int nrot = std::min<int>(rotation_count(stride, 1024), (int)(arena / stride));
        TimeResult t = time_op(s, [&](cudaStream_t st, int r) { f(st, buf + (size_t)r * stride); }, nrot);
        rec.push_back(JObj().add("op", op).add("tokens", T).add("hidden", hidden).add("bytes", bytes).add("time_s", t.per_op_s).str());
        std::printf("%-9s %7d %6d %12zu %10.2f %8.1f\n", opname, T, hidden, bytes, t.per_op_s * 1e6, bytes / t.per_op_s / 1e9);
      }
    }
    write_section(a.out, "elementwise", json_array(rec));  // partial results survive a later failure
  }
  CK(cudaStreamDestroy(s));
  CK(cudaFree(buf));
  CK(cudaFree(w));
  CK(cudaFree(cos_sin));
  CK(cudaFree(pos));
}

}  // namespace cal
