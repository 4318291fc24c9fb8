// The calibrated custom kernels (calibrate/src/kernels.cuh) exposed to PyTorch for the fused
// reference decoder (llama_step_fused.py). One translation unit, CUDA headers only: no torch
// headers, so it compiles in seconds. torch.utils.cpp_extension.load(..., is_python_module=False)
// builds it into a shared library, and llama_step_fused.py binds these extern "C" entry points
// with ctypes, passing tensor data pointers and torch's current stream (so the kernels are
// captured into CUDA graphs like everything else on that stream).
//
// Every entry point launches on `stream` and returns cudaGetLastError() (0 = success).
// Layouts (bf16 unless noted; strides in elements):
//   rmsnorm:  x, y [T, H] contiguous; w [H]                              (H % 8 == 0)
//   add:      o = a + b, n elements, all contiguous                       (n % 8 == 0)
//   silu_mul: in [T, 2H] = [gate | up], out [T, H]
//   rope:     q [T, hq, D] rows q_stride apart, k [T, hkv, D] rows k_stride apart, in place;
//             cos_sin [max_pos, D] = [cos(f) | sin(f)]; pos int32 [T]
//   kv_write: key/value [T, hkv, D] rows k_stride / v_stride apart -> kc, vc [num_blocks, hkv, bs, D];
//             slot int32 [T] = block * bs + offset
//   paged_decode: q [B, hq, D] rows q_stride apart; kc, vc as above; block_table int32 [B, max_blocks];
//             seq_lens int32 [B]; out [B, hq, D]; part_m, part_l fp32 [B*hq*max_parts],
//             part_o fp32 [B*hq*max_parts*D]
#include "../src/kernels.cuh"

#include <cstdint>

using cal::ew_grid;
using bf16 = __nv_bfloat16;

namespace {
int g_sm_count = 0;
int sm_count() {
  if (g_sm_count == 0) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&g_sm_count, cudaDevAttrMultiProcessorCount, dev);
  }
  return g_sm_count;
}
cudaStream_t S(void* s) { return reinterpret_cast<cudaStream_t>(s); }
}  // namespace

extern "C" {

const char* fo_error_string(int err) { return cudaGetErrorString(static_cast<cudaError_t>(err)); }

int fo_sm_count() { return sm_count(); }

int fo_choose_part(int B, int hkv, int max_ctx) { return cal::choose_part(B, hkv, max_ctx, sm_count()); }

int fo_rmsnorm(const void* x, const void* w, void* y, int T, int H, float eps, void* stream) {
  cal::k_rmsnorm<256><<<T, 256, 0, S(stream)>>>((const uint4*)x, (const uint4*)w, (uint4*)y, H / 8, eps);
  return (int)cudaGetLastError();
}

int fo_add(const void* a, const void* b, void* o, long long n, void* stream) {
  const size_t n8 = (size_t)n / 8;
  cal::k_add<<<ew_grid(n8, sm_count()), 256, 0, S(stream)>>>((const uint4*)a, (const uint4*)b, (uint4*)o, n8);
  return (int)cudaGetLastError();
}

int fo_silu_mul(const void* in, void* out, int T, int H, void* stream) {
  const size_t n8 = (size_t)T * H / 8;
  cal::k_silu_mul<<<ew_grid(n8, sm_count()), 256, 0, S(stream)>>>((const uint4*)in, (uint4*)out, H / 8, n8);
  return (int)cudaGetLastError();
}

int fo_rope(void* q, void* k, long long q_stride, long long k_stride, const void* cos_sin, const int* pos, int T, int hq,
            int hkv, int d, void* stream) {
  const size_t total = (size_t)T * (hq + hkv) * (d / 16);
  cal::k_rope<<<ew_grid(total, sm_count()), 256, 0, S(stream)>>>((bf16*)q, (bf16*)k, (const bf16*)cos_sin, pos, T, hq,
                                                                  hkv, d, q_stride, k_stride);
  return (int)cudaGetLastError();
}

int fo_kv_write(const void* key, const void* value, long long k_stride, long long v_stride, void* kc, void* vc,
                const int* slot, int T, int hkv, int bs, int d, void* stream) {
  const size_t total = (size_t)T * hkv * (d / 8);
  cal::k_reshape_and_cache<<<ew_grid(total, sm_count()), 256, 0, S(stream)>>>(
      (const bf16*)key, (const bf16*)value, k_stride, v_stride, (bf16*)kc, (bf16*)vc, slot, T, hkv, bs, d);
  return (int)cudaGetLastError();
}

// Returns -1 for an unsupported shape (only head_dim 128 and 4 query heads per kv head are built).
int fo_paged_decode(const void* q, long long q_stride, const void* kc, const void* vc, const int* block_table,
                    int max_blocks, const int* seq_lens, int B, int hq, int hkv, int bs, int d, int max_parts, int part,
                    void* out, float* part_m, float* part_l, float* part_o, void* stream) {
  if (d != cal::kHeadDim || hq != 4 * hkv || part > cal::kMaxPart) return -1;
  cal::launch_paged_decode((const bf16*)q, q_stride, (const bf16*)kc, (const bf16*)vc, block_table, max_blocks, seq_lens,
                           B, hq, hkv, bs, max_parts, part, (bf16*)out, part_m, part_l, part_o, S(stream));
  return (int)cudaGetLastError();
}

}  // extern "C"
