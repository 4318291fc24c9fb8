// Small memory-bound kernels of a Llama layer (residual add, RMSNorm, SiLU*mul, NeoX RoPE), bf16,
// over token counts 1..16384: gives servesim the fixed cost + bytes/s of the non-GEMM kernels,
// which dominate launch-bound small-batch decode.
#include "common.cuh"

#include <cmath>

namespace cal {

// 8 bf16 per 16-byte access.
union V8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

__global__ void k_add(const uint4* __restrict__ a, const uint4* __restrict__ b, uint4* __restrict__ o, size_t n8) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n8; i += (size_t)gridDim.x * blockDim.x) {
    V8 x, y, z;
    x.u = a[i];
    y.u = b[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) z.h[j] = __hadd2(x.h[j], y.h[j]);
    o[i] = z.u;
  }
}

// One block per token; fp32 sum of squares, as vLLM/HF do.
template <int THREADS>
__global__ void k_rmsnorm(const uint4* __restrict__ x, const uint4* __restrict__ w, uint4* __restrict__ y, int h8,
                          float eps) {
  const uint4* xr = x + (size_t)blockIdx.x * h8;
  uint4* yr = y + (size_t)blockIdx.x * h8;
  float ss = 0.f;
  for (int i = threadIdx.x; i < h8; i += THREADS) {
    V8 v;
    v.u = xr[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 f = __bfloat1622float2(v.h[j]);
      ss += f.x * f.x + f.y * f.y;
    }
  }
  __shared__ float red[THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < THREADS / 32 ? red[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (threadIdx.x == 0) red[0] = t;
  }
  __syncthreads();
  const float r = rsqrtf(red[0] / (h8 * 8) + eps);
  for (int i = threadIdx.x; i < h8; i += THREADS) {
    V8 v, g, o;
    v.u = xr[i];  // second read hits L1/L2: a 8-16 KB row
    g.u = w[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 f = __bfloat1622float2(v.h[j]), gw = __bfloat1622float2(g.h[j]);
      o.h[j] = __floats2bfloat162_rn(f.x * r * gw.x, f.y * r * gw.y);
    }
    yr[i] = o.u;
  }
}

// in: [T, 2H] = [gate | up]; out: [T, H] = silu(gate) * up.
__global__ void k_silu_mul(const uint4* __restrict__ in, uint4* __restrict__ out, int h8, size_t n8) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n8; i += (size_t)gridDim.x * blockDim.x) {
    size_t t = i / h8, c = i % h8;
    V8 g, u, o;
    g.u = in[t * 2 * h8 + c];
    u.u = in[t * 2 * h8 + h8 + c];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 gf = __bfloat1622float2(g.h[j]), uf = __bfloat1622float2(u.h[j]);
      float a = gf.x / (1.f + __expf(-gf.x)) * uf.x;
      float b = gf.y / (1.f + __expf(-gf.y)) * uf.y;
      o.h[j] = __floats2bfloat162_rn(a, b);
    }
    out[i] = o.u;
  }
}

// NeoX-style RoPE in place on q [T, Hq, D] and k [T, Hkv, D], reading cos|sin from a
// [max_pos, D] cache by position, as vLLM's rotary_embedding kernel does. One thread per
// (token, head, 8 rotation pairs): 16-byte loads of x1, x2, cos and sin.
__global__ void k_rope(__nv_bfloat16* __restrict__ q, __nv_bfloat16* __restrict__ k,
                       const __nv_bfloat16* __restrict__ cos_sin, const int* __restrict__ pos, int T, int hq,
                       int hkv, int d) {
  const int half = d / 2, vecs = half / 8;
  const size_t total = (size_t)T * (hq + hkv) * vecs;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
    const int p = (int)(i % vecs) * 8;
    const size_t th = i / vecs;
    const int head = (int)(th % (hq + hkv));
    const size_t t = th / (hq + hkv);
    __nv_bfloat16* base = head < hq ? q + (t * hq + head) * d : k + (t * hkv + (head - hq)) * d;
    const __nv_bfloat16* cs = cos_sin + (size_t)pos[t] * d;
    V8 x1, x2, c, sn, o1, o2;
    x1.u = *reinterpret_cast<const uint4*>(base + p);
    x2.u = *reinterpret_cast<const uint4*>(base + p + half);
    c.u = *reinterpret_cast<const uint4*>(cs + p);
    sn.u = *reinterpret_cast<const uint4*>(cs + half + p);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 a = __bfloat1622float2(x1.h[j]), b = __bfloat1622float2(x2.h[j]);
      const float2 cc = __bfloat1622float2(c.h[j]), ss = __bfloat1622float2(sn.h[j]);
      o1.h[j] = __floats2bfloat162_rn(a.x * cc.x - b.x * ss.x, a.y * cc.y - b.y * ss.y);
      o2.h[j] = __floats2bfloat162_rn(b.x * cc.x + a.x * ss.x, b.y * cc.y + a.y * ss.y);
    }
    *reinterpret_cast<uint4*>(base + p) = o1.u;
    *reinterpret_cast<uint4*>(base + p + half) = o2.u;
  }
}

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
                                                     cos_sin, pos, T, hq, n_kv, head_dim);
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
