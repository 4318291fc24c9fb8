// Decode attention over a paged KV cache (vLLM-style block table gather), grouped-query, bf16,
// split-K ("flash-decoding") when a sequence alone cannot fill the GPU. Gives servesim the decode
// attention time against batch x context x block_size, i.e. how close the KV stream gets to HBM
// bandwidth. Prefill attention is measured separately with PyTorch SDPA (attention_prefill.py).
#include "common.cuh"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace cal {

constexpr int kHeadDim = 128;
constexpr int kAttnThreads = 128;  // 4 warps
constexpr int kMaxPart = 512;      // tokens per CTA at most (scores live in shared memory)
constexpr int kUnroll = 4;         // tokens per 8-lane group per step: 4 warps x 4 groups x 4 = 64

union B8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

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

// One CTA per (partition of <= part_size tokens, kv head, sequence); it serves the G query heads
// that share the kv head, so each K/V byte is read once. Lanes work in groups of 8 per token
// (16 dims each, two 16-byte loads); 4 warps x 4 groups x kUnroll tokens per step.
// K cache / V cache layout: [num_blocks, num_kv_heads, block_size, head_dim].
template <int G>
__global__ void __launch_bounds__(kAttnThreads) k_paged_decode(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ kc, const __nv_bfloat16* __restrict__ vc,
    const int* __restrict__ block_table, int max_blocks, const int* __restrict__ seq_lens, int hkv, int bs, int part_size,
    float scale, __nv_bfloat16* __restrict__ out, float* __restrict__ part_m, float* __restrict__ part_l,
    float* __restrict__ part_o, int max_parts) {
  constexpr int D = kHeadDim, WARPS = kAttnThreads / 32;
  const int p = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
  const int len = seq_lens[b];
  const int start = p * part_size;
  if (start >= len) return;
  const int n = min(len - start, part_size);
  const int nparts = (len + part_size - 1) / part_size;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, tg = lane >> 3, sl = lane & 7;
  const int hq = hkv * G;

  __shared__ float sc[G][kMaxPart];
  __shared__ float red[WARPS][G][D];
  __shared__ float s_max[G], s_sum[G];

  const int* bt = block_table + (size_t)b * max_blocks;
  auto tok = [&](const __nv_bfloat16* base, int t) {
    const int blk = bt[t / bs], off = t % bs;
    return reinterpret_cast<const uint4*>(base + (((size_t)blk * hkv + kvh) * bs + off) * D + sl * 16);
  };

  // Phase 1: scores q.k * scale for this partition.
  {
    float qf[G][16];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const uint4* qp = reinterpret_cast<const uint4*>(q + ((size_t)b * hq + kvh * G + g) * D + sl * 16);
      unpack16(qp[0], qp[1], qf[g]);
#pragma unroll
      for (int j = 0; j < 16; ++j) qf[g][j] *= scale;
    }
    for (int i0 = 0; i0 < n; i0 += 16 * kUnroll) {
      // All kUnroll tokens' loads are issued before any use: 4 x 32 B per lane in flight.
      uint4 kv[kUnroll][2];
      bool valid[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = i0 + u * 16 + warp * 4 + tg;
        valid[u] = i < n;
        kv[u][0] = kv[u][1] = make_uint4(0, 0, 0, 0);
        if (valid[u]) {
          const uint4* p = tok(kc, start + i);
          kv[u][0] = p[0];
          kv[u][1] = p[1];
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        float kf[16];
        unpack16(kv[u][0], kv[u][1], kf);
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
  for (int i0 = 0; i0 < n; i0 += 16 * kUnroll) {
    uint4 vv[kUnroll][2];
    bool valid[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * 16 + warp * 4 + tg;
      valid[u] = i < n;
      vv[u][0] = vv[u][1] = make_uint4(0, 0, 0, 0);
      if (valid[u]) {
        const uint4* p = tok(vc, start + i);
        vv[u][0] = p[0];
        vv[u][1] = p[1];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float xv[16];
      unpack16(vv[u][0], vv[u][1], xv);
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
    const int g = idx / D, d = idx % D, h = kvh * G + g;
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
__global__ void k_decode_reduce(const float* __restrict__ part_m, const float* __restrict__ part_l,
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

struct DecodeBufs {
  float *m = nullptr, *l = nullptr, *o = nullptr;
  size_t cap_parts_total = 0;  // B * hq * max_parts
};

// Splits a sequence only when the grid would otherwise leave SMs idle (flash-decoding heuristic).
static int choose_part(int B, int hkv, int max_ctx) {
  int part = kMaxPart;
  while (part > 64 && (long long)B * hkv * ((max_ctx + part - 1) / part) < 2LL * device().sm_count) part /= 2;
  return part;
}

static void launch_decode(const __nv_bfloat16* q, const __nv_bfloat16* kc, const __nv_bfloat16* vc, const int* bt,
                          int max_blocks, const int* seq_lens, int B, int hq, int hkv, int bs, int max_ctx, int part,
                          __nv_bfloat16* out, DecodeBufs& w, cudaStream_t s) {
  const int max_parts = (max_ctx + part - 1) / part;
  if ((size_t)B * hq * max_parts > w.cap_parts_total) {
    std::fprintf(stderr, "decode workspace too small\n");
    std::exit(1);
  }
  dim3 grid(max_parts, hkv, B);
  const float scale = 1.f / std::sqrt((float)kHeadDim);
  if (hq / hkv != 4) {
    std::fprintf(stderr, "only 4 query heads per kv head are instantiated\n");
    std::exit(1);
  }
  k_paged_decode<4><<<grid, kAttnThreads, 0, s>>>(q, kc, vc, bt, max_blocks, seq_lens, hkv, bs, part, scale, out, w.m, w.l,
                                                   w.o, max_parts);
  if (max_parts > 1) k_decode_reduce<<<dim3(hq, B), kHeadDim, 0, s>>>(w.m, w.l, w.o, seq_lens, part, hq, max_parts, out);
}

// Random block table: each sequence's blocks are a random permutation of [first, first + B*nb).
static std::vector<int> make_table(int B, int nb, int first, std::mt19937& rng) {
  std::vector<int> ids((size_t)B * nb);
  std::iota(ids.begin(), ids.end(), first);
  std::shuffle(ids.begin(), ids.end(), rng);
  return ids;
}

static double check_decode(const __nv_bfloat16* kc, const __nv_bfloat16* vc, DecodeBufs& w, cudaStream_t s, int bs,
                           int part) {
  const int hq = 32, hkv = 8, D = kHeadDim;
  const std::vector<int> lens = {1000, 1500, 37};
  const int B = (int)lens.size(), max_ctx = 1500, nb = (max_ctx + bs - 1) / bs;
  std::mt19937 rng(1234 + bs + part);
  std::vector<int> table = make_table(B, nb, 0, rng);
  int *d_table, *d_lens;
  __nv_bfloat16 *d_q, *d_out;
  CK(cudaMalloc(&d_table, table.size() * 4));
  CK(cudaMalloc(&d_lens, B * 4));
  CK(cudaMalloc(&d_q, (size_t)B * hq * D * 2));
  CK(cudaMalloc(&d_out, (size_t)B * hq * D * 2));
  CK(cudaMemcpy(d_table, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_lens, lens.data(), B * 4, cudaMemcpyHostToDevice));
  fill_uniform_bf16(d_q, (size_t)B * hq * D, -1.f, 1.f, 555 + part);
  CK(cudaMemset(d_out, 0xFF, (size_t)B * hq * D * 2));  // NaN poison
  launch_decode(d_q, kc, vc, d_table, nb, d_lens, B, hq, hkv, bs, max_ctx, part, d_out, w, s);
  CK_LAUNCH();
  CK(cudaStreamSynchronize(s));
  const size_t kv_elems = (size_t)B * nb * hkv * bs * D;  // blocks [0, B*nb) are the ones used
  std::vector<__nv_bfloat16> hk(kv_elems), hv(kv_elems), hqv((size_t)B * hq * D), ho((size_t)B * hq * D);
  CK(cudaMemcpy(hk.data(), kc, kv_elems * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hv.data(), vc, kv_elems * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hqv.data(), d_q, hqv.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ho.data(), d_out, ho.size() * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < hq; ++h) {
      const int kvh = h / (hq / hkv);
      std::vector<double> sc(lens[b]);
      double mx = -1e300;
      for (int t = 0; t < lens[b]; ++t) {
        const int blk = table[(size_t)b * nb + t / bs], off = t % bs;
        const size_t base = (((size_t)blk * hkv + kvh) * bs + off) * D;
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += (double)__bfloat162float(hqv[((size_t)b * hq + h) * D + d]) * __bfloat162float(hk[base + d]);
        sc[t] = dot / std::sqrt((double)D);
        mx = std::max(mx, sc[t]);
      }
      double l = 0;
      for (auto& x : sc) { x = std::exp(x - mx); l += x; }
      for (int d = 0; d < D; ++d) {
        double o = 0;
        for (int t = 0; t < lens[b]; ++t) {
          const int blk = table[(size_t)b * nb + t / bs], off = t % bs;
          o += sc[t] * __bfloat162float(hv[(((size_t)blk * hkv + kvh) * bs + off) * D + d]);
        }
        o /= l;
        const double got = __bfloat162float(ho[((size_t)b * hq + h) * D + d]);
        if (!std::isfinite(got)) return INFINITY;
        num += (got - o) * (got - o);
        den += o * o;
      }
    }
  for (void* p : {(void*)d_table, (void*)d_lens, (void*)d_q, (void*)d_out}) CK(cudaFree(p));
  return std::sqrt(num / den);
}

void run_attention_decode(const Args& a) {
  const int hq = 32, hkv = 8, D = kHeadDim;
  std::vector<int> batches = {1, 4, 16, 64, 256}, contexts = {512, 2048, 8192, 32768}, block_sizes = {16, 32};
  if (a.quick) {
    batches = {1, 16, 64};
    contexts = {512, 8192};
  }
  const size_t tok_bytes = (size_t)hkv * D * 2;  // per token, per K or V
  const double kv_limit = 40e9;                  // skip configurations with more KV than this
  size_t pool_tokens = 0;
  for (int B : batches)
    for (int C : contexts)
      if ((double)B * C * tok_bytes * 2 <= kv_limit) pool_tokens = std::max(pool_tokens, (size_t)B * C);
  pool_tokens = std::max(pool_tokens, (size_t)(2 * kRotateBytes / tok_bytes));
  pool_tokens = round_up(pool_tokens, 64);
  __nv_bfloat16 *kc, *vc, *q, *out;
  CK(cudaMalloc(&kc, pool_tokens * tok_bytes));
  CK(cudaMalloc(&vc, pool_tokens * tok_bytes));
  fill_uniform_bf16(kc, pool_tokens * tok_bytes / 2, -1.f, 1.f, 61);
  fill_uniform_bf16(vc, pool_tokens * tok_bytes / 2, -1.f, 1.f, 62);
  const int maxB = *std::max_element(batches.begin(), batches.end());
  CK(cudaMalloc(&q, (size_t)maxB * hq * D * 2));
  CK(cudaMalloc(&out, (size_t)maxB * hq * D * 2));
  fill_uniform_bf16(q, (size_t)maxB * hq * D, -1.f, 1.f, 63);
  DecodeBufs w;
  w.cap_parts_total = 0;
  for (int B : batches)
    for (int C : contexts) {
      const int part = choose_part(B, hkv, C);
      w.cap_parts_total = std::max(w.cap_parts_total, (size_t)B * hq * ((C + part - 1) / part));
    }
  w.cap_parts_total = std::max(w.cap_parts_total, (size_t)3 * hq * (1500 / 64 + 1));
  CK(cudaMalloc(&w.m, w.cap_parts_total * 4));
  CK(cudaMalloc(&w.l, w.cap_parts_total * 4));
  CK(cudaMalloc(&w.o, w.cap_parts_total * D * 4));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaDeviceSynchronize());

  for (int bs : block_sizes)
    for (int part : {64, 512}) {
      const double err = check_decode(kc, vc, w, s, bs, part);
      std::printf("check paged decode bs=%d part=%d: rel_err %.3g %s\n", bs, part, err, err < 1e-2 ? "PASS" : "FAIL");
    }

  std::vector<std::string> rec;
  std::mt19937 rng(99);
  std::printf("%5s %6s %3s %5s %11s %12s %8s\n", "batch", "ctx", "bs", "part", "time_us", "kv_bytes", "GB/s");
  for (int bs : block_sizes) {
    write_section(a.out, "attention_decode", json_array(rec));  // partial results survive a later failure
    for (int B : batches)
      for (int C : contexts) {
        const size_t kv_bytes = (size_t)B * C * tok_bytes * 2;
        if ((double)kv_bytes > kv_limit) {
          std::printf("%5d %6d %3d skipped: %.1f GB of KV > %.0f GB\n", B, C, bs, kv_bytes / 1e9, kv_limit / 1e9);
          continue;
        }
        const int nb = (C + bs - 1) / bs;
        const size_t pool_blocks = pool_tokens / bs, need = (size_t)B * nb;
        const int nrot = std::min<int>(rotation_count(kv_bytes), (int)(pool_blocks / need));
        // One block table per rotation, each over its own disjoint region of the pool.
        std::vector<int> tables;
        tables.reserve((size_t)nrot * need);
        for (int r = 0; r < nrot; ++r) {
          auto t = make_table(B, nb, (int)(r * need), rng);
          tables.insert(tables.end(), t.begin(), t.end());
        }
        std::vector<int> lens(B, C);
        int *d_tables, *d_lens;
        CK(cudaMalloc(&d_tables, tables.size() * 4));
        CK(cudaMalloc(&d_lens, B * 4));
        CK(cudaMemcpy(d_tables, tables.data(), tables.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_lens, lens.data(), B * 4, cudaMemcpyHostToDevice));
        const int part = choose_part(B, hkv, C);
        TimeResult t = time_op(
            s,
            [&](cudaStream_t st, int r) {
              launch_decode(q, kc, vc, d_tables + (size_t)r * need, nb, d_lens, B, hq, hkv, bs, C, part, out, w, st);
            },
            nrot);
        CK(cudaFree(d_tables));
        CK(cudaFree(d_lens));
        rec.push_back(JObj().add("batch", B).add("context", C).add("block_size", bs).add("num_q_heads", hq)
                          .add("num_kv_heads", hkv).add("head_dim", D).add("time_s", t.per_op_s).add("kv_bytes", kv_bytes).str());
        std::printf("%5d %6d %3d %5d %11.2f %12zu %8.1f\n", B, C, bs, part, t.per_op_s * 1e6, kv_bytes,
                    kv_bytes / t.per_op_s / 1e9);
        std::fflush(stdout);
      }
  }
  CK(cudaStreamDestroy(s));
  for (void* p : {(void*)kc, (void*)vc, (void*)q, (void*)out, (void*)w.m, (void*)w.l, (void*)w.o}) CK(cudaFree(p));
  write_section(a.out, "attention_decode", json_array(rec));
}

}  // namespace cal
