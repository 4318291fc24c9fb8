// Weight-only quantized linear layers (W4A16 AWQ-style with zero points, W8A16 symmetric; group
// size 128, fp16 activations and scales), written here so servesim can model the small-M win and
// large-M loss of 4-bit weights: a GEMV-style kernel for M <= 16 that dequantises in registers,
// and the dequantise-to-fp16-then-cuBLASLt path serving engines switch to at larger M.
#include "common.cuh"
#include "gemm_lt.cuh"

#include <cmath>
#include <memory>

namespace cal {

// ---------------------------------------------------------------- layout
// qweight: [N, K/VPW] uint32 words, VPW = 32/BITS values per word (8 for int4, 4 for int8).
// Words are stored in chunks of 128 per row; inside a chunk, logical word wl = t*32 + lane sits at
// storage slot lane*4 + t, so one 16-byte load gives each lane four words whose activations are
// 32 words apart (consecutive lanes then read consecutive activation vectors: coalesced).
// int4 inside a word: logical value j at bit 4*(j/2) + 16*(j%2), so (word >> 4i) & 0x000F000F
// yields the pair (2i, 2i+1) as two half mantissas in one op (the 0x6400 "magic number" trick).
// int8 inside a word: value j at byte j, stored as two's complement.
// scales [N, K/128] fp16; zeros [N, K/128] fp16 holding integers 0..15 (int4 only):
//   w = (q - zero) * scale (int4),  w = q * scale (int8).
template <int BITS>
struct QL {
  static constexpr int VPW = 32 / BITS;
  static constexpr int CHUNK_WORDS = 128;
  static constexpr int CHUNK_K = CHUNK_WORDS * VPW;
  static constexpr int GROUP = 128;
  static constexpr int WPG = GROUP / VPW;  // words per group
};

__device__ __forceinline__ uint32_t u4get(const uint4& v, int t) {
  return t == 0 ? v.x : t == 1 ? v.y : t == 2 ? v.z : v.w;
}

// Dequantise one word into VPW/2 half2 pairs (logical order 2i, 2i+1).
template <int BITS>
__device__ __forceinline__ void dequant_word(uint32_t q, __half s, __half z, __half2* out) {
  const __half2 s2 = __half2half2(s);
  if constexpr (BITS == 4) {
    // 0x6400 = 1024.0 in fp16; OR-ing a 4-bit value into the mantissa gives 1024 + q exactly.
    const __half2 base = __half2half2(__hadd(__float2half(1024.f), z));  // exact: z is an integer
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t h = ((q >> (4 * i)) & 0x000F000Fu) | 0x64006400u;
      out[i] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h), base), s2);
    }
  } else {
    (void)z;
    // Flip the sign bit to get q+128 as an unsigned byte, splice under 0x64: 1024 + q + 128.
    const uint32_t u = q ^ 0x80808080u;
    const __half2 base = __half2half2(__float2half(1152.f));
    uint32_t h0 = __byte_perm(u, 0x64646464u, 0x4140), h1 = __byte_perm(u, 0x64646464u, 0x4342);
    out[0] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h0), base), s2);
    out[1] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h1), base), s2);
  }
}

// GEMV-style kernel, M <= 16 tokens: each warp streams R weight rows, dequantises in registers and
// multiplies against all M activation rows (read through L1; they are tiny and shared by every
// warp). Weights are prefetched two chunks ahead so enough bytes are in flight to approach HBM
// bandwidth with only N/R warps. Block = 4 warps = 8 rows.
constexpr int kGemvWarps = 4, kGemvR = 2;

template <int BITS, int M>
__global__ void __launch_bounds__(kGemvWarps * 32) k_gemv_q(const uint32_t* __restrict__ qw, const __half* __restrict__ scales,
                                                            const __half* __restrict__ zeros, const __half* __restrict__ x,
                                                            __half* __restrict__ y, int N, int K) {
  using L = QL<BITS>;
  constexpr int R = kGemvR;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n0 = (blockIdx.x * kGemvWarps + warp) * R;
  if (n0 >= N) return;
  const int wpr = K / L::VPW, gpr = K / L::GROUP, nchunks = K / L::CHUNK_K;

  struct Stage {
    uint4 w[R];
    __half s[R][4], z[R][4];
  };
  auto load = [&](int c, Stage& st) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint4* row = reinterpret_cast<const uint4*>(qw + (size_t)(n0 + r) * wpr);
      st.w[r] = __ldcs(row + c * 32 + lane);  // streamed once: don't keep in L1
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int g = (c * L::CHUNK_WORDS + t * 32 + lane) / L::WPG;
        st.s[r][t] = scales[(size_t)(n0 + r) * gpr + g];
        st.z[r][t] = BITS == 4 ? zeros[(size_t)(n0 + r) * gpr + g] : __float2half(0.f);
      }
    }
  };

  float acc[R][M];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) acc[r][m] = 0.f;

  Stage cur, nxt, nn;
  load(0, cur);
  if (nchunks > 1) load(1, nxt);
  for (int c = 0; c < nchunks; ++c) {
    if (c + 2 < nchunks) load(c + 2, nn);
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int wl = t * 32 + lane;
      const int k0 = c * L::CHUNK_K + wl * L::VPW;
      __half2 wv[R][L::VPW / 2];
#pragma unroll
      for (int r = 0; r < R; ++r) dequant_word<BITS>(u4get(cur.w[r], t), cur.s[r][t], cur.z[r][t], wv[r]);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        __half2 xv[L::VPW / 2];
        if constexpr (BITS == 4) {
          *reinterpret_cast<uint4*>(xv) = __ldg(reinterpret_cast<const uint4*>(x + (size_t)m * K + k0));
        } else {
          *reinterpret_cast<uint2*>(xv) = __ldg(reinterpret_cast<const uint2*>(x + (size_t)m * K + k0));
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
          // fp16 products summed over one word (4-8 terms), then fp32 accumulation.
          __half2 p = __hmul2(xv[0], wv[r][0]);
#pragma unroll
          for (int i = 1; i < L::VPW / 2; ++i) p = __hfma2(xv[i], wv[r][i], p);
          float2 f = __half22float2(p);
          acc[r][m] += f.x + f.y;
        }
      }
    }
    cur = nxt;
    nxt = nn;
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float v = acc[r][m];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) y[(size_t)m * N + n0 + r] = __float2half(v);
    }
}

// GEMV v2 (same math, tuned for memory-level parallelism). v1 above keeps a warp's loads only
// two chunks ahead and issues eight 2-byte scale/zero loads per row per chunk; with K = 4096 a
// warp lives for only 4 chunks, so load latency dominates. v2 keeps D chunks in flight in a
// register ring, reads each lane's four (scale, zero) pairs with one 16-byte load from the
// lane-friendly SZ layout below, and sums a chunk's products in half2 before going to fp32.
// SZ layout: [N, K/128] half2 (scale, zero); inside each chunk's GPC groups (8 for int4, 4 for
// int8), group g sits at (g & 1) * 4 + (g >> 1) for int4 (so lanes 0-15, which need the even
// groups, and lanes 16-31, the odd ones, each read 4 consecutive pairs) and at g for int8.
template <int BITS>
__device__ __forceinline__ int sz_pos(int gi) {
  return BITS == 4 ? (gi & 1) * 4 + (gi >> 1) : gi;
}

template <int BITS>
__global__ void k_make_sz(const __half* __restrict__ s, const __half* __restrict__ z, __half2* __restrict__ sz, size_t n) {
  constexpr int GPC = QL<BITS>::CHUNK_K / QL<BITS>::GROUP;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const size_t blk = i / GPC;
    const int gi = (int)(i % GPC);
    sz[blk * GPC + sz_pos<BITS>(gi)] = __halves2half2(s[i], BITS == 4 ? z[i] : __float2half(0.f));
  }
}

template <int BITS, int M, int D>
__global__ void __launch_bounds__(kGemvWarps * 32) k_gemv_q2(const uint32_t* __restrict__ qw, const __half2* __restrict__ sz,
                                                             const __half* __restrict__ x, __half* __restrict__ y, int N, int K) {
  using L = QL<BITS>;
  constexpr int R = kGemvR;
  constexpr int GPC = L::CHUNK_K / L::GROUP;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n0 = (blockIdx.x * kGemvWarps + warp) * R;
  if (n0 >= N) return;
  const int wpr = K / L::VPW, gpr = K / L::GROUP, nchunks = K / L::CHUNK_K;
  const int sz_off = BITS == 4 ? (lane >> 4) * 4 : 0;

  struct Stage {
    uint4 w[R];
    uint4 s[R];
  };
  auto load = [&](int c, Stage& st) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      st.w[r] = __ldcs(reinterpret_cast<const uint4*>(qw + (size_t)(n0 + r) * wpr) + c * 32 + lane);
      st.s[r] = __ldg(reinterpret_cast<const uint4*>(sz + (size_t)(n0 + r) * gpr + c * GPC + sz_off));
    }
  };

  float acc[R][M];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) acc[r][m] = 0.f;

  Stage ring[D];
#pragma unroll
  for (int d = 0; d < D; ++d)
    if (d < nchunks) load(d, ring[d]);
  const __half2 k1024 = __float2half2_rn(1024.f), k1152 = __float2half2_rn(1152.f);
  for (int c0 = 0; c0 < nchunks; c0 += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const int c = c0 + d;
      if (c >= nchunks) break;
      __half2 ah[R][M];
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m) ah[r][m] = __float2half2_rn(0.f);
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int k0 = c * L::CHUNK_K + (t * 32 + lane) * L::VPW;
        __half2 wv[R][L::VPW / 2];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const uint32_t pair = u4get(ring[d].s[r], t);
          uint32_t sb = __byte_perm(pair, 0, 0x1010);
          const __half2 s2 = *reinterpret_cast<__half2*>(&sb);
          const uint32_t q = u4get(ring[d].w[r], t);
          if constexpr (BITS == 4) {
            uint32_t zb = __byte_perm(pair, 0, 0x3232);
            const __half2 base = __hadd2(*reinterpret_cast<__half2*>(&zb), k1024);  // exact: integer zero
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              uint32_t h = ((q >> (4 * i)) & 0x000F000Fu) | 0x64006400u;
              wv[r][i] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h), base), s2);
            }
          } else {
            const uint32_t u = q ^ 0x80808080u;
            uint32_t h0 = __byte_perm(u, 0x64646464u, 0x4140), h1 = __byte_perm(u, 0x64646464u, 0x4342);
            wv[r][0] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h0), k1152), s2);
            wv[r][1] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h1), k1152), s2);
          }
        }
#pragma unroll
        for (int m = 0; m < M; ++m) {
          __half2 xv[L::VPW / 2];
          if constexpr (BITS == 4) {
            *reinterpret_cast<uint4*>(xv) = __ldg(reinterpret_cast<const uint4*>(x + (size_t)m * K + k0));
          } else {
            *reinterpret_cast<uint2*>(xv) = __ldg(reinterpret_cast<const uint2*>(x + (size_t)m * K + k0));
          }
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int i = 0; i < L::VPW / 2; ++i) ah[r][m] = __hfma2(xv[i], wv[r][i], ah[r][m]);
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const float2 f = __half22float2(ah[r][m]);
          acc[r][m] += f.x + f.y;
        }
      if (c + D < nchunks) load(c + D, ring[d]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float v = acc[r][m];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) y[(size_t)m * N + n0 + r] = __float2half(v);
    }
}

// GEMV v3: v2's data path, restructured after Nsight Compute showed v2 issuing one instruction
// per warp every ~11 cycles at 31% occupancy (register-bound), i.e. latency-bound on dependent
// HFMA2 chains, with a partial last wave on small N. Changes: NACC independent half2 accumulators
// per (row, token) so the FMA chains overlap; the two warps of a pair split K in halves (shorter
// warp lifetimes, smaller tail) and combine through shared memory; a 2-deep ring and a
// register cap at small M so more warps fit on an SM.
template <int BITS, int M, int D, int NACC>
__global__ void __launch_bounds__(kGemvWarps * 32, (M == 1 ? 6 : (M == 2 ? 5 : 1)))
    k_gemv_q3(const uint32_t* __restrict__ qw, const __half2* __restrict__ sz, const __half* __restrict__ x,
              __half* __restrict__ y, int N, int K) {
  using L = QL<BITS>;
  constexpr int R = kGemvR, SPLIT = 2, GROUPS = kGemvWarps / SPLIT;
  constexpr int GPC = L::CHUNK_K / L::GROUP;
  __shared__ float part[GROUPS][R][M];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rg = warp / SPLIT, ks = warp % SPLIT;
  const int n0 = (blockIdx.x * GROUPS + rg) * R;
  const bool active = n0 < N;  // no early return: the block meets at a barrier below
  const int wpr = K / L::VPW, gpr = K / L::GROUP, nchunks = K / L::CHUNK_K;
  const int c_begin = ks * nchunks / SPLIT, c_end = (ks + 1) * nchunks / SPLIT;
  const int sz_off = BITS == 4 ? (lane >> 4) * 4 : 0;

  struct Stage {
    uint4 w[R];
    uint4 s[R];
  };
  auto load = [&](int c, Stage& st) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      st.w[r] = __ldcs(reinterpret_cast<const uint4*>(qw + (size_t)(n0 + r) * wpr) + c * 32 + lane);
      st.s[r] = __ldg(reinterpret_cast<const uint4*>(sz + (size_t)(n0 + r) * gpr + c * GPC + sz_off));
    }
  };
  float acc[R][M];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) acc[r][m] = 0.f;

  if (active) {
    Stage ring[D];
#pragma unroll
    for (int d = 0; d < D; ++d)
      if (c_begin + d < c_end) load(c_begin + d, ring[d]);
    const __half2 k1024 = __float2half2_rn(1024.f), k1152 = __float2half2_rn(1152.f);
    for (int c0 = c_begin; c0 < c_end; c0 += D) {
#pragma unroll
      for (int d = 0; d < D; ++d) {
        const int c = c0 + d;
        if (c >= c_end) break;
        __half2 ah[R][M][NACC];
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int m = 0; m < M; ++m)
#pragma unroll
            for (int j = 0; j < NACC; ++j) ah[r][m][j] = __float2half2_rn(0.f);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int k0 = c * L::CHUNK_K + (t * 32 + lane) * L::VPW;
          __half2 xv[M][L::VPW / 2];
#pragma unroll
          for (int m = 0; m < M; ++m) {
            if constexpr (BITS == 4) {
              *reinterpret_cast<uint4*>(xv[m]) = __ldg(reinterpret_cast<const uint4*>(x + (size_t)m * K + k0));
            } else {
              *reinterpret_cast<uint2*>(xv[m]) = __ldg(reinterpret_cast<const uint2*>(x + (size_t)m * K + k0));
            }
          }
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const uint32_t pair = u4get(ring[d].s[r], t);
            uint32_t sb = __byte_perm(pair, 0, 0x1010);
            const __half2 s2 = *reinterpret_cast<__half2*>(&sb);
            const uint32_t q = u4get(ring[d].w[r], t);
            __half2 wv[L::VPW / 2];
            if constexpr (BITS == 4) {
              uint32_t zb = __byte_perm(pair, 0, 0x3232);
              const __half2 base = __hadd2(*reinterpret_cast<__half2*>(&zb), k1024);
#pragma unroll
              for (int i = 0; i < 4; ++i) {
                uint32_t h = ((q >> (4 * i)) & 0x000F000Fu) | 0x64006400u;
                wv[i] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h), base), s2);
              }
            } else {
              const uint32_t u = q ^ 0x80808080u;
              uint32_t h0 = __byte_perm(u, 0x64646464u, 0x4140), h1 = __byte_perm(u, 0x64646464u, 0x4342);
              wv[0] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h0), k1152), s2);
              wv[1] = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h1), k1152), s2);
            }
#pragma unroll
            for (int m = 0; m < M; ++m)
#pragma unroll
              for (int i = 0; i < L::VPW / 2; ++i) ah[r][m][i % NACC] = __hfma2(xv[m][i], wv[i], ah[r][m][i % NACC]);
          }
        }
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int m = 0; m < M; ++m)
#pragma unroll
            for (int j = 0; j < NACC; ++j) {
              const float2 f = __half22float2(ah[r][m][j]);
              acc[r][m] += f.x + f.y;
            }
        if (c + D < c_end) load(c + D, ring[d]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float v = acc[r][m];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      acc[r][m] = v;
      if (ks == 1 && lane == 0) part[rg][r][m] = v;
    }
  __syncthreads();
  if (active && ks == 0 && lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int m = 0; m < M; ++m) y[(size_t)m * N + n0 + r] = __float2half(acc[r][m] + part[rg][r][m]);
  }
}

// Dequantise the whole weight to fp16 [N, K] (one thread per logical word, so the fp16 writes are
// coalesced), for the large-M path: W16 then goes through an ordinary fp16 cuBLASLt GEMM.
template <int BITS>
__global__ void k_dequant(const uint32_t* __restrict__ qw, const __half* __restrict__ scales,
                          const __half* __restrict__ zeros, __half* __restrict__ w16, int N, int K) {
  using L = QL<BITS>;
  const int wpr = K / L::VPW, gpr = K / L::GROUP;
  const size_t total = (size_t)N * wpr;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total; idx += (size_t)gridDim.x * blockDim.x) {
    // 32-bit index math: every shape here has < 2^32 words, and 64-bit division is slow.
    const unsigned u = (unsigned)idx;
    const int n = (int)(u / (unsigned)wpr), gw = (int)(u % (unsigned)wpr);
    const int c = gw / L::CHUNK_WORDS, wl = gw % L::CHUNK_WORDS, t = wl / 32, lane = wl % 32;
    const uint32_t q = qw[(size_t)n * wpr + c * L::CHUNK_WORDS + lane * 4 + t];
    const int g = gw / L::WPG;
    const __half s = scales[(size_t)n * gpr + g];
    const __half z = BITS == 4 ? zeros[(size_t)n * gpr + g] : __float2half(0.f);
    __half2 out[L::VPW / 2];
    dequant_word<BITS>(q, s, z, out);
    __half* dst = w16 + (size_t)n * K + (size_t)gw * L::VPW;
    if constexpr (BITS == 4) *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<uint4*>(out);
    else *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<uint2*>(out);
  }
}

// Host-side reading of the layout above, written independently of the kernels so the check
// tests the kernels against the spec rather than against themselves.
static double host_weight(int bits, const uint32_t* qrow, const __half* srow, const __half* zrow, int k) {
  const int vpw = 32 / bits, gw = k / vpw, j = k % vpw;
  const int c = gw / 128, wl = gw % 128, t = wl / 32, lane = wl % 32;
  const uint32_t word = qrow[c * 128 + lane * 4 + t];
  const int g = k / 128;
  const double s = __half2float(srow[g]);
  if (bits == 4) {
    const int q = (word >> (4 * (j / 2) + 16 * (j % 2))) & 0xF;
    return (q - (double)__half2float(zrow[g])) * s;
  }
  const int q = (int8_t)((word >> (8 * j)) & 0xFF);
  return q * s;
}

template <int BITS, int M>
static void launch_gemv_m(const uint32_t* qw, const __half* s, const __half* z, const __half* x, __half* y, int N, int K,
                          cudaStream_t st) {
  const int rows_per_block = kGemvWarps * kGemvR;
  k_gemv_q<BITS, M><<<(N + rows_per_block - 1) / rows_per_block, kGemvWarps * 32, 0, st>>>(qw, s, z, x, y, N, K);
}
template <int BITS>
static void launch_gemv(int m, const uint32_t* qw, const __half* s, const __half* z, const __half* x, __half* y, int N,
                        int K, cudaStream_t st) {
  switch (m) {
    case 1: launch_gemv_m<BITS, 1>(qw, s, z, x, y, N, K, st); break;
    case 2: launch_gemv_m<BITS, 2>(qw, s, z, x, y, N, K, st); break;
    case 4: launch_gemv_m<BITS, 4>(qw, s, z, x, y, N, K, st); break;
    case 8: launch_gemv_m<BITS, 8>(qw, s, z, x, y, N, K, st); break;
    case 16: launch_gemv_m<BITS, 16>(qw, s, z, x, y, N, K, st); break;
    default: std::fprintf(stderr, "gemv: unsupported M %d\n", m); std::exit(1);
  }
}
template <int BITS, int M>
static void launch_gemv2_m(const uint32_t* qw, const __half2* sz, const __half* x, __half* y, int N, int K, cudaStream_t st) {
  const int rows_per_block = kGemvWarps * kGemvR;
  // Deeper ring where registers allow it (few accumulators at small M).
  k_gemv_q2<BITS, M, (M <= 4 ? 4 : 2)><<<(N + rows_per_block - 1) / rows_per_block, kGemvWarps * 32, 0, st>>>(qw, sz, x, y, N, K);
}
template <int BITS>
static void launch_gemv2(int m, const uint32_t* qw, const __half2* sz, const __half* x, __half* y, int N, int K,
                         cudaStream_t st) {
  switch (m) {
    case 1: launch_gemv2_m<BITS, 1>(qw, sz, x, y, N, K, st); break;
    case 2: launch_gemv2_m<BITS, 2>(qw, sz, x, y, N, K, st); break;
    case 4: launch_gemv2_m<BITS, 4>(qw, sz, x, y, N, K, st); break;
    case 8: launch_gemv2_m<BITS, 8>(qw, sz, x, y, N, K, st); break;
    case 16: launch_gemv2_m<BITS, 16>(qw, sz, x, y, N, K, st); break;
    default: std::fprintf(stderr, "gemv2: unsupported M %d\n", m); std::exit(1);
  }
}
template <int BITS, int M>
static void launch_gemv3_m(const uint32_t* qw, const __half2* sz, const __half* x, __half* y, int N, int K, cudaStream_t st) {
  const int rows_per_block = kGemvWarps / 2 * kGemvR;  // two warps per row pair (split K)
  k_gemv_q3<BITS, M, 2, (M <= 2 ? 4 : (M <= 4 ? 2 : 1))>
      <<<(N + rows_per_block - 1) / rows_per_block, kGemvWarps * 32, 0, st>>>(qw, sz, x, y, N, K);
}
template <int BITS>
static void launch_gemv3(int m, const uint32_t* qw, const __half2* sz, const __half* x, __half* y, int N, int K,
                         cudaStream_t st) {
  switch (m) {
    case 1: launch_gemv3_m<BITS, 1>(qw, sz, x, y, N, K, st); break;
    case 2: launch_gemv3_m<BITS, 2>(qw, sz, x, y, N, K, st); break;
    case 4: launch_gemv3_m<BITS, 4>(qw, sz, x, y, N, K, st); break;
    case 8: launch_gemv3_m<BITS, 8>(qw, sz, x, y, N, K, st); break;
    case 16: launch_gemv3_m<BITS, 16>(qw, sz, x, y, N, K, st); break;
    default: std::fprintf(stderr, "gemv3: unsupported M %d\n", m); std::exit(1);
  }
}
template <int BITS>
static void launch_dequant(const uint32_t* qw, const __half* s, const __half* z, __half* w16, int N, int K,
                           cudaStream_t st) {
  const size_t total = (size_t)N * K / QL<BITS>::VPW;
  const unsigned blocks = (unsigned)std::min<size_t>((total + 255) / 256, (size_t)device().sm_count * 16);
  k_dequant<BITS><<<blocks, 256, 0, st>>>(qw, s, z, w16, N, K);
}

void run_quant_gemm(const Args& a) {
  struct Shape { int n, k; };
  // Llama-3-8B linear layers: qkv, o, gate_up, down, lm_head; then the bundled models of the
  // vLLM runs servesim is checked against (Llama-2-7B; Llama-2-70B whole and as its TP4 shards;
  // Mixtral-8x7B's experts as TP2 shards). Shapes whose K is not a multiple of the layout's
  // 1024-value chunk (Llama-2-7B down, K = 11008) are skipped by the loop below and say so.
  std::vector<Shape> shapes = {{6144, 4096},  {4096, 4096},  {28672, 4096}, {4096, 14336}, {128256, 4096},
                               {12288, 4096}, {22016, 4096}, {4096, 11008}, {10240, 8192}, {8192, 8192},
                               {57344, 8192}, {8192, 28672}, {2560, 8192},  {8192, 2048},  {14336, 8192},
                               {8192, 7168},  {4096, 7168}};
  std::vector<int> ms = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  if (a.quick) {
    shapes.resize(2);
    ms = {1, 4, 16, 256};
  }
  const int max_m = ms.back();
  size_t max_qbytes = 0, max_nk = 0, max_mk = 0, max_mn = 0;
  for (auto& sh : shapes) {
    max_nk = std::max(max_nk, (size_t)sh.n * sh.k);
    max_mk = std::max(max_mk, (size_t)max_m * sh.k);
    max_mn = std::max(max_mn, (size_t)max_m * sh.n);
  }
  max_qbytes = max_nk;  // int8 is the larger packing
  const size_t qpool = std::max(max_qbytes, 2 * kRotateBytes);
  const size_t spool = qpool / 16;  // scales (and zeros) are 1/32 (int4) or 1/64 (int8) of qweight
  uint32_t* Q;
  __half *S, *Z, *X, *Y, *W16;
  CK(cudaMalloc(&Q, qpool));
  CK(cudaMalloc(&S, spool));
  CK(cudaMalloc(&Z, spool));
  CK(cudaMalloc(&X, max_mk * 2));
  CK(cudaMalloc(&Y, max_mn * 2));
  CK(cudaMalloc(&W16, max_nk * 2));
  __half2* SZ;  // v2 GEMV's (scale, zero) layout, derived from S and Z per bit width
  CK(cudaMalloc(&SZ, spool * 2));
  fill_random_bits(Q, qpool, 41);
  fill_uniform_f16(S, spool / 2, 0.01f, 0.02f, 42);
  fill_int_f16(Z, spool / 2, 0, 15, 43);
  fill_uniform_f16(X, max_mk, -1.f, 1.f, 44);
  CK(cudaDeviceSynchronize());

  cublasLtHandle_t h;
  CKB(cublasLtCreate(&h));
  void* ws;
  CK(cudaMalloc(&ws, kLtWorkspaceBytes));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  TimeOpts topt;
  topt.budget_s = 0.15;

  std::vector<std::string> rec;
  const int kRows = 64;  // output columns checked per point
  std::printf("%-6s %-12s %6s %7s %6s %11s %9s\n", "dtype", "path", "m", "n", "k", "time_us", "rel_err");
  for (int bits : {4, 8}) {
    const char* dn = bits == 4 ? "w4a16" : "w8a16";
    {
      // Element i of S/Z maps into SZ within blocks of 8 (int4) or 4 (int8) groups; every
      // rotation offset and row start is a multiple of 8 elements, so one pass covers all of them.
      const size_t n = spool / 2 / 8 * 8;
      const unsigned blocks = (unsigned)std::min<size_t>((n + 255) / 256, (size_t)device().sm_count * 16);
      if (bits == 4) k_make_sz<4><<<blocks, 256, 0, s>>>(S, Z, SZ, n);
      else k_make_sz<8><<<blocks, 256, 0, s>>>(S, Z, SZ, n);
      CK_LAUNCH();
      CK(cudaStreamSynchronize(s));
    }
    for (auto& sh : shapes) {
      const int N = sh.n, K = sh.k;
      const int wpr = K / (32 / bits), gpr = K / 128;
      const size_t qb = round_up((size_t)N * wpr * 4, 256), sb = round_up((size_t)N * gpr * 2, 256);
      int nrot = std::min<int>({rotation_count(qb + 2 * sb), (int)(qpool / qb), (int)(spool / sb)});
      if (K % QL<4>::CHUNK_K || K % QL<8>::CHUNK_K || N % (kGemvWarps * kGemvR)) {
        std::printf("shape %dx%d not supported by the layout, skipped\n", N, K);
        continue;
      }
      // Host copy of the checked rows (rotation copy 0) and of the first 4 activation rows.
      std::vector<int> cols(kRows);
      for (int i = 0; i < kRows; ++i) cols[i] = (int)(((long long)i * N) / kRows + (i * 37) % std::max(1, N / kRows));
      std::vector<double> wref((size_t)kRows * K);
      {
        std::vector<uint32_t> qrow(wpr);
        std::vector<__half> srow(gpr), zrow(gpr);
        for (int i = 0; i < kRows; ++i) {
          CK(cudaMemcpy(qrow.data(), Q + (size_t)cols[i] * wpr, wpr * 4, cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(srow.data(), S + (size_t)cols[i] * gpr, gpr * 2, cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(zrow.data(), Z + (size_t)cols[i] * gpr, gpr * 2, cudaMemcpyDeviceToHost));
          for (int k = 0; k < K; ++k) wref[(size_t)i * K + k] = host_weight(bits, qrow.data(), srow.data(), zrow.data(), k);
        }
      }
      std::vector<__half> xh((size_t)4 * K);
      CK(cudaMemcpy(xh.data(), X, xh.size() * 2, cudaMemcpyDeviceToHost));

      for (const char* path : {"gemv", "dequant_gemm"}) {
        const bool gemv = std::string(path) == "gemv";
        for (int m : ms) {
          if (gemv && m > 16) continue;
          std::unique_ptr<LtGemm> g;
          if (!gemv) {
            g.reset(new LtGemm(h, GemmDtype::fp16, m, N, K, nullptr));
            if (!g->ok()) {
              std::printf("no cuBLASLt algorithm for fp16 %dx%dx%d, skipped\n", m, N, K);
              continue;
            }
          }
          // GEMV has three implementations (v1..v3, same function); the recorded time is the faster
          // one that passes the check, as an engine would ship its best kernel.
          double best_t = INFINITY, best_err = INFINITY;
          int best_v = 0;
          for (int variant : gemv ? std::vector<int>{1, 2, 3} : std::vector<int>{0}) {
            auto op = [&](cudaStream_t st, int r) {
              const uint32_t* q = (const uint32_t*)((const char*)Q + (size_t)r * qb);
              const __half* sc = (const __half*)((const char*)S + (size_t)r * sb);
              const __half* zr = (const __half*)((const char*)Z + (size_t)r * sb);
              const __half2* szp = (const __half2*)((const char*)SZ + 2 * (size_t)r * sb);
              if (variant == 1) {
                if (bits == 4) launch_gemv<4>(m, q, sc, zr, X, Y, N, K, st);
                else launch_gemv<8>(m, q, sc, zr, X, Y, N, K, st);
              } else if (variant == 2) {
                if (bits == 4) launch_gemv2<4>(m, q, szp, X, Y, N, K, st);
                else launch_gemv2<8>(m, q, szp, X, Y, N, K, st);
              } else if (variant == 3) {
                if (bits == 4) launch_gemv3<4>(m, q, szp, X, Y, N, K, st);
                else launch_gemv3<8>(m, q, szp, X, Y, N, K, st);
              } else {
                if (bits == 4) launch_dequant<4>(q, sc, zr, W16, N, K, st);
                else launch_dequant<8>(q, sc, zr, W16, N, K, st);
                g->run(X, W16, Y, ws, st);
              }
            };
            // Correctness on rotation copy 0, output poisoned first (0xFFFF is a NaN in fp16).
            const int mc = std::min(m, 4);
            CK(cudaMemsetAsync(Y, 0xFF, (size_t)mc * N * 2, s));
            op(s, 0);
            CK_LAUNCH();
            CK(cudaStreamSynchronize(s));
            std::vector<__half> yh((size_t)mc * N);
            CK(cudaMemcpy(yh.data(), Y, yh.size() * 2, cudaMemcpyDeviceToHost));
            double num = 0, den = 0;
            bool finite = true;
            for (int mm = 0; mm < mc; ++mm)
              for (int i = 0; i < kRows; ++i) {
                double ref = 0;
                for (int k = 0; k < K; ++k) ref += (double)__half2float(xh[(size_t)mm * K + k]) * wref[(size_t)i * K + k];
                double got = __half2float(yh[(size_t)mm * N + cols[i]]);
                if (!std::isfinite(got)) finite = false;
                num += (got - ref) * (got - ref);
                den += ref * ref;
              }
            const double rel = finite ? std::sqrt(num / den) : INFINITY;
            TimeResult t = time_op(s, op, nrot, topt);
            const char* vname = variant == 0 ? "" : (variant == 1 ? " v1" : (variant == 2 ? " v2" : " v3"));
            std::printf("%-6s %-12s %6d %7d %6d %11.2f %9.2e%s%s\n", dn, path, m, N, K, t.per_op_s * 1e6, rel, vname,
                        rel < 1e-2 ? "" : "  FAIL");
            if (rel < 1e-2 && t.per_op_s < best_t) {
              best_t = t.per_op_s;
              best_err = rel;
              best_v = variant;
            }
          }
          if (!std::isfinite(best_t)) {
            std::printf("%-6s %-12s %6d %7d %6d  no implementation passed the check, not recorded\n", dn, path, m, N, K);
            continue;
          }
          if (gemv) std::printf("%-6s %-12s %6d %7d %6d %11.2f  <- recorded (v%d)\n", dn, path, m, N, K, best_t * 1e6, best_v);
          rec.push_back(JObj().add("dtype", dn).add("group_size", 128).add("path", path).add("m", m).add("n", N).add("k", K)
                            .add("time_s", best_t).add("rel_err", best_err).str());
        }
      }
      write_section(a.out, "quant_gemm", json_array(rec));  // partial results survive a later failure
      std::fflush(stdout);
    }
  }
  CK(cudaStreamDestroy(s));
  CKB(cublasLtDestroy(h));
  for (void* p : {(void*)Q, (void*)S, (void*)Z, (void*)SZ, (void*)X, (void*)Y, (void*)W16, ws}) CK(cudaFree(p));
}

}  // namespace cal
