// The custom CUDA kernels of a Llama decoder layer, shared by the calibration benchmarks
// (bench_elementwise.cu, bench_attention.cu) and the fused PyTorch reference
// (reference/fused_ops.cu), so that the reference model runs exactly the kernels whose times are
// in raw.json: residual add, RMSNorm, SiLU*mul, NeoX RoPE, the paged KV-cache write, and paged
// grouped-query decode attention (split-K with a reduce kernel).
//
// Self-contained: CUDA headers only (no common.cuh, no torch). Non-template kernels are `static`
// so that several translation units can include this header.
#pragma once

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstddef>

namespace cal {

// ---------------------------------------------------------------- elementwise (bench_elementwise)

// 8 bf16 per 16-byte access.
union V8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

static __global__ void k_add(const uint4* __restrict__ a, const uint4* __restrict__ b, uint4* __restrict__ o, size_t n8) {
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
static __global__ void k_silu_mul(const uint4* __restrict__ in, uint4* __restrict__ out, int h8, size_t n8) {
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

// NeoX-style RoPE in place on q [T, Hq, D] and k [T, Hkv, D] (token rows q_stride / k_stride
// elements apart: Hq*D / Hkv*D when contiguous, or the fused QKV row width when q and k are views of
// the QKV GEMM output, as in vLLM), reading cos|sin from a
// [max_pos, D] cache by position, as vLLM's rotary_embedding kernel does. One thread per
// (token, head, 8 rotation pairs): 16-byte loads of x1, x2, cos and sin.
static __global__ void k_rope(__nv_bfloat16* __restrict__ q, __nv_bfloat16* __restrict__ k,
                              const __nv_bfloat16* __restrict__ cos_sin, const int* __restrict__ pos, int T, int hq,
                              int hkv, int d, long long q_stride, long long k_stride) {
  const int half = d / 2, vecs = half / 8;
  const size_t total = (size_t)T * (hq + hkv) * vecs;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
    const int p = (int)(i % vecs) * 8;
    const size_t th = i / vecs;
    const int head = (int)(th % (hq + hkv));
    const size_t t = th / (hq + hkv);
    __nv_bfloat16* base = head < hq ? q + t * q_stride + (size_t)head * d : k + t * k_stride + (size_t)(head - hq) * d;
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

// Writes the new tokens' K and V into the paged cache, vLLM reshape_and_cache style.
// key / value: [T, hkv, d] with token rows k_stride / v_stride elements apart (views of the fused
// QKV output are fine). kc / vc: [num_blocks, hkv, bs, d]. slot[t] = block * bs + offset; a
// negative slot is skipped (padding). One thread per (token, kv head, 8 elements), 16-byte accesses.
static __global__ void k_reshape_and_cache(const __nv_bfloat16* __restrict__ key, const __nv_bfloat16* __restrict__ value,
                                           long long k_stride, long long v_stride, __nv_bfloat16* __restrict__ kc,
                                           __nv_bfloat16* __restrict__ vc, const int* __restrict__ slot, int T, int hkv,
                                           int bs, int d) {
  const int vecs = d / 8;
  const size_t total = (size_t)T * hkv * vecs;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
    const int e = (int)(i % vecs) * 8;
    const size_t th = i / vecs;
    const int h = (int)(th % hkv);
    const size_t t = th / hkv;
    const int s = slot[t];
    if (s < 0) continue;
    const size_t dst = (((size_t)(s / bs) * hkv + h) * bs + (s % bs)) * d + e;
    *reinterpret_cast<uint4*>(kc + dst) = *reinterpret_cast<const uint4*>(key + t * k_stride + (size_t)h * d + e);
    *reinterpret_cast<uint4*>(vc + dst) = *reinterpret_cast<const uint4*>(value + t * v_stride + (size_t)h * d + e);
  }
}

// Grid size of the grid-stride elementwise kernels: one thread per item, at most 16 CTAs per SM.
inline unsigned ew_grid(size_t n, int sm_count) {
  size_t b = (n + 255) / 256;
  const size_t cap = (size_t)sm_count * 16;
  if (b > cap) b = cap;
  return (unsigned)(b < 1 ? 1 : b);
}

// ---------------------------------------------------------------- paged decode attention (bench_attention)

constexpr int kHeadDim = 128;
constexpr int kAttnThreads = 128;  // 4 warps
constexpr int kMaxPart = 512;      // tokens per CTA at most (scores live in shared memory)
constexpr int kUnroll = 4;         // tokens per 8-lane group per step: 4 warps x 4 groups x 4 = 64

using B8 = V8;

__device__ __forceinline__ void unpack16(const uint4& a, const uint4& b, float* f) {
  B8 x, y;
  x.u = a;
  y.u = b;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 p = __bfloat1622float2(x.h[i]), q = __bfloat1622float2(y.h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
    f[8 + 2 * i] = q.x;
    f[8 + 2 * i + 1] = q.y;
  }
}

// KV-cache element formats of the paged decode kernel. Each lane reads 16 consecutive dims of one
// token's K or V and turns them into floats. bf16 is the engines' default; the quantized formats
// measure what an 8- or 4-bit KV cache saves in bytes and costs in dequantization:
//   fp8   e4m3 with one scale per tensor (vLLM's kv_cache_dtype=fp8): 16 B per lane;
//   int8  with an fp16 (scale, zero) pair per token and kv head (LMDeploy's quant_policy=8): 16 B;
//   int4  two per byte, the same per-token (scale, zero) (LMDeploy quant_policy=4, QServe KV4): 8 B.
// Conversions use integer bit tricks, as production kernels do (FasterTransformer / LMDeploy's
// int8 and uint4 converters): the hardware int->float and fp8->half->float conversions run at a
// fraction of the FMA rate on Hopper, and with them this kernel measured int8 and int4 1.5x SLOWER
// than bf16 at batch 256 (the commit that added them says more). kUnroll keeps 128 B per lane in
// flight in every format (int4: 16 tokens x 8 B).
struct KvRaw {
  uint4 a, b;
};
// 2^23 + v as a float's bits -> v exactly (v < 2^23): the magic-number int->float conversion.
__device__ __forceinline__ float magic_to_float(unsigned bits23) { return __uint_as_float(0x4B000000u | bits23) - 8388608.f; }

struct KvBf16 {
  static constexpr int kBits = 16, kUnroll = cal::kUnroll;
  static constexpr bool kTokenScale = false;
  __device__ static void load(const unsigned char* p, KvRaw& r) {
    r.a = reinterpret_cast<const uint4*>(p)[0];
    r.b = reinterpret_cast<const uint4*>(p)[1];
  }
  __device__ static void unpack(const KvRaw& r, float, float, float* f) { unpack16(r.a, r.b, f); }
};
struct KvFp8 {
  static constexpr int kBits = 8, kUnroll = 8;
  static constexpr bool kTokenScale = false;
  __device__ static void load(const unsigned char* p, KvRaw& r) { r.a = *reinterpret_cast<const uint4*>(p); }
  // e4m3 -> fp32 by moving the sign, exponent and mantissa bits into place (exponent bias 7 -> 127
  // is a factor 2^120, folded into the scale). Exact for normals and subnormals; NaN is not kept.
  __device__ static void unpack(const KvRaw& r, float scale, float, float* f) {
    const float s = scale * 1.329227995784916e36f;  // 2^120
    const unsigned w[4] = {r.a.x, r.a.y, r.a.z, r.a.w};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const unsigned x = (w[i / 4] >> (8 * (i % 4))) & 0xFFu;
      f[i] = __uint_as_float(((x & 0x80u) << 24) | ((x & 0x7Fu) << 20)) * s;
    }
  }
};
struct KvInt8 {
  static constexpr int kBits = 8, kUnroll = 8;
  static constexpr bool kTokenScale = true;
  __device__ static void load(const unsigned char* p, KvRaw& r) { r.a = *reinterpret_cast<const uint4*>(p); }
  // x + 128 as the low byte of 2^23's mantissa (byte_perm), then (v - 128) * scale + zero.
  __device__ static void unpack(const KvRaw& r, float scale, float zero, float* f) {
    const unsigned w[4] = {r.a.x ^ 0x80808080u, r.a.y ^ 0x80808080u, r.a.z ^ 0x80808080u, r.a.w ^ 0x80808080u};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const float v = __uint_as_float(__byte_perm(w[i / 4], 0x4B000000u, 0x7440u + (i % 4))) - 8388736.f;
      f[i] = fmaf(v, scale, zero);
    }
  }
};
struct KvInt4 {
  static constexpr int kBits = 4, kUnroll = 16;
  static constexpr bool kTokenScale = true;
  __device__ static void load(const unsigned char* p, KvRaw& r) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    r.a.x = v.x;
    r.a.y = v.y;
  }
  __device__ static void unpack(const KvRaw& r, float scale, float zero, float* f) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const unsigned w = i < 8 ? r.a.x : r.a.y;
      f[i] = fmaf(magic_to_float((w >> (4 * (i % 8))) & 0xFu), scale, zero);
    }
  }
};

// The same formats with the hardware conversions (cvt fp8x2 -> f16x2 -> f32, I2F), for comparing
// the two ways to dequantize; and any format with another unroll depth (tokens in flight per lane).
struct KvFp8Cvt : KvFp8 {
  __device__ static void unpack(const KvRaw& r, float scale, float, float* f) {
    const __nv_fp8x2_storage_t* x = reinterpret_cast<const __nv_fp8x2_storage_t*>(&r.a);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float2 v = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(x[i], __NV_E4M3)));
      f[2 * i] = v.x * scale;
      f[2 * i + 1] = v.y * scale;
    }
  }
};
struct KvInt8Cvt : KvInt8 {
  __device__ static void unpack(const KvRaw& r, float scale, float zero, float* f) {
    const signed char* x = reinterpret_cast<const signed char*>(&r.a);
#pragma unroll
    for (int i = 0; i < 16; ++i) f[i] = fmaf((float)x[i], scale, zero);
  }
};
struct KvInt4Cvt : KvInt4 {
  __device__ static void unpack(const KvRaw& r, float scale, float zero, float* f) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const unsigned w = i < 8 ? r.a.x : r.a.y;
      f[i] = fmaf((float)((w >> (4 * (i % 8))) & 0xFu), scale, zero);
    }
  }
};
template <class KV, int kUnrollTokens>
struct KvUnroll : KV {
  static constexpr int kUnroll = kUnrollTokens;
};

// Dequantization scales of a quantized KV cache: per tensor (fp8) or, for the integer formats,
// an fp16 (scale, zero) per token and kv head laid out like the cache without head_dim.
struct KvScales {
  const __half2* k = nullptr;
  const __half2* v = nullptr;
  float k_tensor = 1.f, v_tensor = 1.f;
};

// One CTA per (partition of <= part_size tokens, kv head, sequence); it serves the G query heads
// that share the kv head, so each K/V byte is read once. Lanes work in groups of 8 per token
// (16 dims each: two 16-byte loads in bf16); 4 warps x 4 groups x kUnroll tokens per step.
// Grid (parts, hq / G, B): CTA y serves query heads [y*G, y*G + G), whose kv head is
// y*G / (hq / hkv). G = hq / hkv is the grouped kernel; G = 1 stands in for TensorRT-LLM's
// masked_multihead_attention (one CTA per query head), whose hq / hkv CTAs of a group each read
// their kv head again (section attention_decode_mmha). passes = hq / hkv > 1 (G = 1 only) launches
// grid (parts, hkv, B * passes) instead: pass r = blockIdx.z / B serves query head r of every kv
// head's group, so a kv head's re-reads come a whole pass (one read of the cache) later.
// K cache / V cache layout: [num_blocks, num_kv_heads, block_size, head_dim] elements of KV. q:
// [B, hq, D] with sequences q_stride elements apart (hq*D when contiguous); out: [B, hq, D].
template <int G, class KV = KvBf16>
__global__ void __launch_bounds__(kAttnThreads) k_paged_decode(
    const __nv_bfloat16* __restrict__ q, const void* __restrict__ kc_v, const void* __restrict__ vc_v,
    const int* __restrict__ block_table, int max_blocks, const int* __restrict__ seq_lens, int hkv, int bs, int part_size,
    long long q_stride, float scale, __nv_bfloat16* __restrict__ out, float* __restrict__ part_m, float* __restrict__ part_l,
    float* __restrict__ part_o, int max_parts, KvScales kvs, int passes = 1) {
  constexpr int D = kHeadDim, WARPS = kAttnThreads / 32, U = KV::kUnroll;
  const int p = blockIdx.x;
  int b = blockIdx.z, h0 = blockIdx.y * G, hq = gridDim.y * G;  // first query head of this CTA, query heads
  if (passes > 1) {
    const int B = gridDim.z / passes;
    b = blockIdx.z % B;
    hq = gridDim.y * passes;
    h0 = blockIdx.y * passes + blockIdx.z / B;
  }
  const int kvh = h0 * hkv / hq;
  const int len = seq_lens[b];
  const int start = p * part_size;
  if (start >= len) return;
  const int n = min(len - start, part_size);
  const int nparts = (len + part_size - 1) / part_size;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, tg = lane >> 3, sl = lane & 7;

  __shared__ float sc[G][kMaxPart];
  __shared__ float red[WARPS][G][D];
  __shared__ float s_max[G], s_sum[G];

  const int* bt = block_table + (size_t)b * max_blocks;
  const unsigned char* kc = static_cast<const unsigned char*>(kc_v);
  const unsigned char* vc = static_cast<const unsigned char*>(vc_v);
  // Reads this lane's 16 dims of token t (and its scale pair when the format has one).
  auto load_tok = [&](const unsigned char* base, const __half2* scales, int t, KvRaw& r, float2& sz) {
    const int blk = bt[t / bs], off = t % bs;
    const size_t slot = ((size_t)blk * hkv + kvh) * bs + off;
    KV::load(base + (slot * D + sl * 16) * KV::kBits / 8, r);
    if constexpr (KV::kTokenScale) sz = __half22float2(scales[slot]);
  };

  // Phase 1: scores q.k * scale for this partition.
  {
    float qf[G][16];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const uint4* qp = reinterpret_cast<const uint4*>(q + (size_t)b * q_stride + (size_t)(h0 + g) * D + sl * 16);
      unpack16(qp[0], qp[1], qf[g]);
#pragma unroll
      for (int j = 0; j < 16; ++j) qf[g][j] *= scale;
    }
    for (int i0 = 0; i0 < n; i0 += 16 * U) {
      // All U tokens' loads are issued before any use: 128 B per lane in flight in every format.
      KvRaw kv[U];
      float2 ksz[U];
      bool valid[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u * 16 + warp * 4 + tg;
        valid[u] = i < n;
        kv[u].a = kv[u].b = make_uint4(0, 0, 0, 0);
        ksz[u] = make_float2(kvs.k_tensor, 0.f);
        if (valid[u]) load_tok(kc, kvs.k, start + i, kv[u], ksz[u]);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float kf[16];
        KV::unpack(kv[u], ksz[u].x, ksz[u].y, kf);
        float dg[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          float x = 0.f;
#pragma unroll
          for (int j = 0; j < 16; ++j) x += qf[g][j] * kf[j];
#pragma unroll
          for (int o = 4; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
          dg[g] = x;
        }
        if (sl == 0 && valid[u]) {
          const int i = i0 + u * 16 + warp * 4 + tg;
#pragma unroll
          for (int g = 0; g < G; ++g) sc[g][i] = dg[g];
        }
      }
    }
  }
  __syncthreads();

  // Phase 2: softmax statistics per head (one warp per head); scores become exp(s - max).
  for (int g = warp; g < G; g += WARPS) {
    float mx = -INFINITY;
    for (int i = lane; i < n; i += 32) mx = fmaxf(mx, sc[g][i]);
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
    for (int i = lane; i < n; i += 32) {
      float e = __expf(sc[g][i] - mx);
      sc[g][i] = e;
      sum += e;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) {
      s_max[g] = mx;
      s_sum[g] = sum;
    }
  }
  __syncthreads();

  // Phase 3: sum_t p[g][t] * V[t] over this partition.
  float acc[G][16];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int j = 0; j < 16; ++j) acc[g][j] = 0.f;
  for (int i0 = 0; i0 < n; i0 += 16 * U) {
    KvRaw vv[U];
    float2 vsz[U];
    bool valid[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = i0 + u * 16 + warp * 4 + tg;
      valid[u] = i < n;
      vv[u].a = vv[u].b = make_uint4(0, 0, 0, 0);
      vsz[u] = make_float2(kvs.v_tensor, 0.f);
      if (valid[u]) load_tok(vc, kvs.v, start + i, vv[u], vsz[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float xv[16];
      KV::unpack(vv[u], vsz[u].x, vsz[u].y, xv);
      const int i = i0 + u * 16 + warp * 4 + tg;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float pg = valid[u] ? sc[g][i] : 0.f;
#pragma unroll
        for (int j = 0; j < 16; ++j) acc[g][j] += pg * xv[j];
      }
    }
  }
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      acc[g][j] += __shfl_xor_sync(0xffffffffu, acc[g][j], 8);
      acc[g][j] += __shfl_xor_sync(0xffffffffu, acc[g][j], 16);
    }
  if (tg == 0) {
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int j = 0; j < 16; ++j) red[warp][g][sl * 16 + j] = acc[g][j];
  }
  __syncthreads();
  for (int idx = tid; idx < G * D; idx += kAttnThreads) {
    const int g = idx / D, d = idx % D, h = h0 + g;
    float o = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) o += red[w][g][d];
    if (nparts == 1) {
      out[((size_t)b * hq + h) * D + d] = __float2bfloat16(o / s_sum[g]);
    } else {
      const size_t pi = ((size_t)b * hq + h) * max_parts + p;
      part_o[pi * D + d] = o;
      if (d == 0) {
        part_m[pi] = s_max[g];
        part_l[pi] = s_sum[g];
      }
    }
  }
}

// Combines the partitions of one (sequence, query head): rescale each by exp(m_p - max).
static __global__ void k_decode_reduce(const float* __restrict__ part_m, const float* __restrict__ part_l,
                                const float* __restrict__ part_o, const int* __restrict__ seq_lens, int part_size,
                                int hq, int max_parts, __nv_bfloat16* __restrict__ out) {
  const int h = blockIdx.x, b = blockIdx.y, d = threadIdx.x;
  const int np = (seq_lens[b] + part_size - 1) / part_size;
  if (np <= 1) return;  // written directly by the main kernel
  const size_t base = ((size_t)b * hq + h) * max_parts;
  float mx = -INFINITY;
  for (int p = 0; p < np; ++p) mx = fmaxf(mx, part_m[base + p]);
  float l = 0.f, o = 0.f;
  for (int p = 0; p < np; ++p) {
    const float w = __expf(part_m[base + p] - mx);
    l += w * part_l[base + p];
    o += w * part_o[(base + p) * kHeadDim + d];
  }
  out[((size_t)b * hq + h) * kHeadDim + d] = __float2bfloat16(o / l);
}

// Splits a sequence only when the grid would otherwise leave SMs idle (flash-decoding heuristic).
inline int choose_part(int B, int hkv, int max_ctx, int sm_count) {
  int part = kMaxPart;
  while (part > 64 && (long long)B * hkv * ((max_ctx + part - 1) / part) < 2LL * sm_count) part /= 2;
  return part;
}

// Launches the decode attention with G query heads per CTA (and, when split, the reduce). The
// caller checks that G divides hq and that the workspace holds B * hq * max_parts partitions
// (part_o: times kHeadDim floats). max_parts = ceil(max_ctx / part). kc / vc hold elements of KV.
// passes: see k_paged_decode (G = 1 only).
template <int G, class KV = KvBf16>
inline void launch_paged_decode_g(const __nv_bfloat16* q, long long q_stride, const void* kc, const void* vc,
                                  const int* bt, int max_blocks, const int* seq_lens, int B, int hq, int hkv, int bs,
                                  int max_parts, int part, __nv_bfloat16* out, float* part_m, float* part_l,
                                  float* part_o, cudaStream_t s, KvScales kvs = {}, int passes = 1) {
  const dim3 grid = passes > 1 ? dim3(max_parts, hkv, B * passes) : dim3(max_parts, hq / G, B);
  const float scale = 1.f / std::sqrt((float)kHeadDim);
  k_paged_decode<G, KV><<<grid, kAttnThreads, 0, s>>>(q, kc, vc, bt, max_blocks, seq_lens, hkv, bs, part, q_stride,
                                                       scale, out, part_m, part_l, part_o, max_parts, kvs, passes);
  if (max_parts > 1)
    k_decode_reduce<<<dim3(hq, B), kHeadDim, 0, s>>>(part_m, part_l, part_o, seq_lens, part, hq, max_parts, out);
}

// The grouped kernel at 4 query heads per kv head (Llama-3-8B; the only group the fused reference
// and the attention_decode sections use): the caller checks hq / hkv == 4.
template <class KV = KvBf16>
inline void launch_paged_decode(const __nv_bfloat16* q, long long q_stride, const void* kc, const void* vc,
                                const int* bt, int max_blocks, const int* seq_lens, int B, int hq, int hkv, int bs,
                                int max_parts, int part, __nv_bfloat16* out, float* part_m, float* part_l,
                                float* part_o, cudaStream_t s, KvScales kvs = {}) {
  launch_paged_decode_g<4, KV>(q, q_stride, kc, vc, bt, max_blocks, seq_lens, B, hq, hkv, bs, max_parts, part, out,
                               part_m, part_l, part_o, s, kvs);
}

}  // namespace cal
