// Decode attention over a paged KV cache (vLLM-style block table gather), grouped-query, bf16,
// split-K ("flash-decoding") when a sequence alone cannot fill the GPU. Gives servesim the decode
// attention time against batch x context x block_size, i.e. how close the KV stream gets to HBM
// bandwidth. Prefill attention is measured separately with PyTorch SDPA (attention_prefill.py).
#include "common.cuh"
#include "kernels.cuh"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <type_traits>

namespace cal {

// Kernels (k_paged_decode, k_decode_reduce, launch_paged_decode, choose_part) live in
// kernels.cuh, shared with reference/fused_ops.cu.

struct DecodeBufs {
  float *m = nullptr, *l = nullptr, *o = nullptr;
  size_t cap_parts_total = 0;  // B * hq * max_parts
};

// Splits a sequence only when the grid would otherwise leave SMs idle (kernels.cuh).
static int choose_part(int B, int hkv, int max_ctx) { return choose_part(B, hkv, max_ctx, device().sm_count); }

// Split-K workspace for every (batch, context) of a sweep with hq query heads, and for the
// correctness checks (3 sequences of up to 1500 tokens at part 64).
static DecodeBufs alloc_decode_bufs(const std::vector<int>& batches, const std::vector<int>& contexts, int hq, int hkv) {
  DecodeBufs w;
  for (int B : batches)
    for (int C : contexts) {
      const int part = choose_part(B, hkv, C);
      w.cap_parts_total = std::max(w.cap_parts_total, (size_t)B * hq * ((C + part - 1) / part));
    }
  w.cap_parts_total = std::max(w.cap_parts_total, (size_t)3 * hq * (1500 / 64 + 1));
  CK(cudaMalloc(&w.m, w.cap_parts_total * 4));
  CK(cudaMalloc(&w.l, w.cap_parts_total * 4));
  CK(cudaMalloc(&w.o, w.cap_parts_total * kHeadDim * 4));
  return w;
}

// Partitions per sequence; exits if the workspace cannot hold them for every query head.
static int decode_parts(const DecodeBufs& w, int B, int hq, int max_ctx, int part) {
  const int max_parts = (max_ctx + part - 1) / part;
  if ((size_t)B * hq * max_parts > w.cap_parts_total) {
    std::fprintf(stderr, "decode workspace too small\n");
    std::exit(1);
  }
  return max_parts;
}

template <class KV = KvBf16>
static void launch_decode(const __nv_bfloat16* q, const void* kc, const void* vc, const int* bt, int max_blocks,
                          const int* seq_lens, int B, int hq, int hkv, int bs, int max_ctx, int part,
                          __nv_bfloat16* out, DecodeBufs& w, cudaStream_t s, KvScales kvs = {}) {
  const int max_parts = decode_parts(w, B, hq, max_ctx, part);
  if (hq / hkv != 4) {
    std::fprintf(stderr, "only 4 query heads per kv head are instantiated\n");
    std::exit(1);
  }
  launch_paged_decode<KV>(q, (long long)hq * kHeadDim, kc, vc, bt, max_blocks, seq_lens, B, hq, hkv, bs, max_parts, part,
                          out, w.m, w.l, w.o, s, kvs);
}

// Random block table: each sequence's blocks are a random permutation of [first, first + B*nb).
static std::vector<int> make_table(int B, int nb, int first, std::mt19937& rng) {
  std::vector<int> ids((size_t)B * nb);
  std::iota(ids.begin(), ids.end(), first);
  std::shuffle(ids.begin(), ids.end(), rng);
  return ids;
}

// nrot block tables of B sequences x nb blocks, one per rotation over its own disjoint region of
// the pool, and every sequence's length C, on the device (the caller frees both).
static void upload_tables(int B, int nb, int C, int nrot, std::mt19937& rng, int*& d_tables, int*& d_lens) {
  const size_t need = (size_t)B * nb;
  std::vector<int> tables;
  tables.reserve((size_t)nrot * need);
  for (int r = 0; r < nrot; ++r) {
    auto t = make_table(B, nb, (int)(r * need), rng);
    tables.insert(tables.end(), t.begin(), t.end());
  }
  const std::vector<int> lens(B, C);
  CK(cudaMalloc(&d_tables, tables.size() * 4));
  CK(cudaMalloc(&d_lens, B * 4));
  CK(cudaMemcpy(d_tables, tables.data(), tables.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_lens, lens.data(), B * 4, cudaMemcpyHostToDevice));
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
  DecodeBufs w = alloc_decode_bufs(batches, contexts, hq, hkv);
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
        int *d_tables, *d_lens;
        upload_tables(B, nb, C, nrot, rng, d_tables, d_lens);
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


// ---------------------------------------------------------------- quantized KV caches
// The same paged decode kernel reading an fp8, int8 or int4 KV cache (kernels.cuh's KvFp8, KvInt8,
// KvInt4) against bf16, on the same shapes: what a quantized KV cache saves in bytes and costs in
// dequantization per decode step (servesim's kv_cache_dtype: bytes per element plus a per-format
// ALU term). Section attention_decode_kv.

namespace {

// Format name and conversion variant of each kernel instantiation.
template <class KV> struct KvInfo;
template <> struct KvInfo<KvBf16> { static constexpr const char* name = "bf16"; static constexpr const char* conv = "shift"; };
template <> struct KvInfo<KvFp8> { static constexpr const char* name = "fp8_e4m3"; static constexpr const char* conv = "bits"; };
template <> struct KvInfo<KvInt8> { static constexpr const char* name = "int8"; static constexpr const char* conv = "bits"; };
template <> struct KvInfo<KvInt4> { static constexpr const char* name = "int4"; static constexpr const char* conv = "bits"; };
template <> struct KvInfo<KvFp8Cvt> { static constexpr const char* name = "fp8_e4m3"; static constexpr const char* conv = "cvt"; };
template <> struct KvInfo<KvInt8Cvt> { static constexpr const char* name = "int8"; static constexpr const char* conv = "cvt"; };
template <> struct KvInfo<KvInt4Cvt> { static constexpr const char* name = "int4"; static constexpr const char* conv = "cvt"; };
template <class KV, int N> struct KvInfo<KvUnroll<KV, N>> : KvInfo<KV> {};
template <class KV> const char* kv_name() { return KvInfo<KV>::name; }

// Host copy of a quantized cache: the bytes the kernel reads, the per-slot (scale, zero) pairs, and
// the values those bytes stand for (the reference computes from these, so the check measures the
// kernel, not the quantization error).
struct HostKv {
  std::vector<unsigned char> bytes;
  std::vector<__half2> scales;  // per slot (token x kv head); empty for bf16 / fp8
  std::vector<float> deq;       // slots x D
  float tensor_scale = 1.f;
};

template <class KV>
HostKv quantize_host(const std::vector<float>& x, size_t slots) {
  const int D = kHeadDim;
  HostKv h;
  h.bytes.assign(slots * D * KV::kBits / 8, 0);
  h.deq.resize(slots * D);
  if constexpr (KV::kBits == 16) {
    auto* o = reinterpret_cast<__nv_bfloat16*>(h.bytes.data());
    for (size_t i = 0; i < x.size(); ++i) {
      o[i] = __float2bfloat16(x[i]);
      h.deq[i] = __bfloat162float(o[i]);
    }
  } else if constexpr (!KV::kTokenScale) {  // fp8, one scale per tensor
    float amax = 0.f;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    h.tensor_scale = amax / 448.f;
    for (size_t i = 0; i < x.size(); ++i) {
      const __nv_fp8_e4m3 e(x[i] / h.tensor_scale);
      h.bytes[i] = e.__x;
      h.deq[i] = float(e) * h.tensor_scale;
    }
  } else {  // int8 / int4: asymmetric per slot, q * scale + zero
    const int levels = (1 << KV::kBits) - 1, qmin = KV::kBits == 8 ? -128 : 0;
    h.scales.resize(slots);
    for (size_t sl = 0; sl < slots; ++sl) {
      const float* v = &x[sl * D];
      const float lo = *std::min_element(v, v + D), hi = *std::max_element(v, v + D);
      const __half sc = __float2half(std::max(hi - lo, 1e-6f) / levels), z = __float2half(lo - qmin * __half2float(sc));
      h.scales[sl] = __halves2half2(sc, z);
      const float scf = __half2float(sc), zf = __half2float(z);
      for (int d = 0; d < D; ++d) {
        const int qv = std::min(qmin + levels, std::max(qmin, (int)std::lround((v[d] - zf) / scf)));
        const size_t i = sl * D + d;
        if (KV::kBits == 8) h.bytes[i] = (unsigned char)(signed char)qv;
        else h.bytes[i / 2] |= (unsigned char)(qv << (4 * (i % 2)));
        h.deq[i] = std::fma((float)qv, scf, zf);
      }
    }
  }
  return h;
}

struct DeviceKv {
  void *k = nullptr, *v = nullptr;
  __half2 *ks = nullptr, *vs = nullptr;
  KvScales scales() const { return KvScales{ks, vs, 1.f, 1.f}; }
};

// Correctness of one format: random K/V quantized on the host, decoded on the device, compared with
// a double-precision reference over the dequantized values. Returns the relative L2 error. hq query
// heads over 8 kv heads; launch(q, k, v, table, max_blocks, lens, B, max_ctx, part, out, scales)
// runs the kernel under test.
template <class KV, class Launch>
double check_decode_kv(DecodeBufs& w, cudaStream_t s, int bs, int part, int hq, const Launch& launch) {
  const int hkv = 8, D = kHeadDim;
  const std::vector<int> lens = {1000, 1500, 37};
  const int B = (int)lens.size(), max_ctx = 1500, nb = (max_ctx + bs - 1) / bs;
  std::mt19937 rng(4321 + bs + part);
  const std::vector<int> table = make_table(B, nb, 0, rng);
  const size_t slots = (size_t)B * nb * hkv * bs;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> kx(slots * D), vx(slots * D), qx((size_t)B * hq * D);
  for (auto* vec : {&kx, &vx, &qx})
    for (float& f : *vec) f = u(rng);
  const HostKv hk = quantize_host<KV>(kx, slots), hv = quantize_host<KV>(vx, slots);
  std::vector<__nv_bfloat16> qb(qx.size()), ob(qx.size());
  for (size_t i = 0; i < qx.size(); ++i) {
    qb[i] = __float2bfloat16(qx[i]);
    qx[i] = __bfloat162float(qb[i]);
  }
  void *dk, *dv;
  __half2 *dks = nullptr, *dvs = nullptr;
  int *d_table, *d_lens;
  __nv_bfloat16 *d_q, *d_out;
  CK(cudaMalloc(&dk, hk.bytes.size()));
  CK(cudaMalloc(&dv, hv.bytes.size()));
  CK(cudaMemcpy(dk, hk.bytes.data(), hk.bytes.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, hv.bytes.data(), hv.bytes.size(), cudaMemcpyHostToDevice));
  if (!hk.scales.empty()) {
    CK(cudaMalloc(&dks, slots * sizeof(__half2)));
    CK(cudaMalloc(&dvs, slots * sizeof(__half2)));
    CK(cudaMemcpy(dks, hk.scales.data(), slots * sizeof(__half2), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dvs, hv.scales.data(), slots * sizeof(__half2), cudaMemcpyHostToDevice));
  }
  CK(cudaMalloc(&d_table, table.size() * 4));
  CK(cudaMalloc(&d_lens, B * 4));
  CK(cudaMalloc(&d_q, qb.size() * 2));
  CK(cudaMalloc(&d_out, ob.size() * 2));
  CK(cudaMemcpy(d_table, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_lens, lens.data(), B * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_q, qb.data(), qb.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemset(d_out, 0xFF, ob.size() * 2));  // NaN poison
  const KvScales kvs{dks, dvs, hk.tensor_scale, hv.tensor_scale};
  launch(d_q, dk, dv, d_table, nb, d_lens, B, max_ctx, part, d_out, kvs);
  CK_LAUNCH();
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(ob.data(), d_out, ob.size() * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < hq; ++h) {
      const int kvh = h / (hq / hkv);
      auto slot = [&](int t) { return ((size_t)table[(size_t)b * nb + t / bs] * hkv + kvh) * bs + t % bs; };
      std::vector<double> sc(lens[b]);
      double mx = -1e300, l = 0;
      for (int t = 0; t < lens[b]; ++t) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += (double)qx[((size_t)b * hq + h) * D + d] * hk.deq[slot(t) * D + d];
        sc[t] = dot / std::sqrt((double)D);
        mx = std::max(mx, sc[t]);
      }
      for (auto& x : sc) {
        x = std::exp(x - mx);
        l += x;
      }
      for (int d = 0; d < D; ++d) {
        double o = 0;
        for (int t = 0; t < lens[b]; ++t) o += sc[t] * hv.deq[slot(t) * D + d];
        o /= l;
        const double got = __bfloat162float(ob[((size_t)b * hq + h) * D + d]);
        if (!std::isfinite(got)) return INFINITY;
        num += (got - o) * (got - o);
        den += o * o;
      }
    }
  for (void* p : {dk, dv, (void*)dks, (void*)dvs, (void*)d_table, (void*)d_lens, (void*)d_q, (void*)d_out}) CK(cudaFree(p));
  return std::sqrt(num / den);
}

// The grouped kernel at 4 query heads per kv head (the attention_decode_kv shapes).
template <class KV>
double check_decode_kv(DecodeBufs& w, cudaStream_t s, int bs, int part) {
  return check_decode_kv<KV>(w, s, bs, part, 32,
                             [&](const __nv_bfloat16* q, const void* k, const void* v, const int* table, int nb,
                                 const int* lens, int B, int max_ctx, int p, __nv_bfloat16* out, KvScales kvs) {
                               launch_decode<KV>(q, k, v, table, nb, lens, B, 32, 8, bs, max_ctx, p, out, w, s, kvs);
                             });
}

// A device KV cache of `slots` (token x kv head) slots in format KV, random: bf16 and fp8 uniform
// in [-1, 1), the integer formats random bits with scales in [0.01, 0.02). free_kv releases it.
template <class KV>
DeviceKv alloc_kv(size_t slots, uint64_t seed) {
  const int D = kHeadDim;
  DeviceKv kv;
  CK(cudaMalloc(&kv.k, slots * D * KV::kBits / 8));
  CK(cudaMalloc(&kv.v, slots * D * KV::kBits / 8));
  if constexpr (KV::kBits == 16) {
    fill_uniform_bf16((__nv_bfloat16*)kv.k, slots * D, -1.f, 1.f, seed);
    fill_uniform_bf16((__nv_bfloat16*)kv.v, slots * D, -1.f, 1.f, seed + 1);
  } else if constexpr (!KV::kTokenScale) {
    fill_uniform_fp8e4m3(kv.k, slots * D, -1.f, 1.f, seed);
    fill_uniform_fp8e4m3(kv.v, slots * D, -1.f, 1.f, seed + 1);
  } else {
    fill_random_bits(kv.k, slots * D * KV::kBits / 8, seed);
    fill_random_bits(kv.v, slots * D * KV::kBits / 8, seed + 1);
    CK(cudaMalloc(&kv.ks, slots * sizeof(__half2)));
    CK(cudaMalloc(&kv.vs, slots * sizeof(__half2)));
    fill_uniform_f16((__half*)kv.ks, 2 * slots, 0.01f, 0.02f, seed + 2);
    fill_uniform_f16((__half*)kv.vs, 2 * slots, 0.01f, 0.02f, seed + 3);
  }
  CK(cudaDeviceSynchronize());
  return kv;
}
void free_kv(DeviceKv& kv) {
  for (void* p : {kv.k, kv.v, (void*)kv.ks, (void*)kv.vs}) CK(cudaFree(p));
  kv = DeviceKv{};
}

// Times one format over the grid; bf16_time (batch, context) -> seconds, filled by the bf16 pass,
// gives each quantized point its ratio to bf16 on the same shapes in the same process.
template <class KV>
void time_format(const std::vector<int>& batches, const std::vector<int>& contexts, int bs, size_t pool_tokens,
                 const __nv_bfloat16* q, __nv_bfloat16* out, DecodeBufs& w, cudaStream_t s,
                 std::map<std::pair<int, int>, double>& bf16_time, std::vector<std::string>& rec, std::mt19937& rng) {
  const int hq = 32, hkv = 8, D = kHeadDim;
  const size_t slot_bytes = (size_t)D * KV::kBits / 8 + (KV::kTokenScale ? sizeof(__half2) : 0);
  DeviceKv kv = alloc_kv<KV>(pool_tokens * hkv, 71);
  for (int B : batches)
    for (int C : contexts) {
      const int nb = (C + bs - 1) / bs;
      const size_t need = (size_t)B * nb, pool_blocks = pool_tokens / bs;
      const size_t kv_bytes = (size_t)B * C * hkv * slot_bytes * 2;
      const int nrot = std::max(1, std::min<int>(rotation_count(kv_bytes), (int)(pool_blocks / need)));
      int *d_tables, *d_lens;
      upload_tables(B, nb, C, nrot, rng, d_tables, d_lens);
      const int part = choose_part(B, hkv, C);
      const TimeResult t = time_op(
          s,
          [&](cudaStream_t st, int r) {
            launch_decode<KV>(q, kv.k, kv.v, d_tables + (size_t)r * need, nb, d_lens, B, hq, hkv, bs, C, part, out, w,
                              st, kv.scales());
          },
          nrot);
      CK(cudaFree(d_tables));
      CK(cudaFree(d_lens));
      if (KV::kBits == 16) bf16_time[{B, C}] = t.per_op_s;
      const double ratio = t.per_op_s / bf16_time[{B, C}];
      rec.push_back(JObj().add("kv_dtype", std::string(kv_name<KV>())).add("conversion", KvInfo<KV>::conv)
                        .add("unroll", KV::kUnroll).add("batch", B).add("context", C)
                        .add("block_size", bs).add("num_q_heads", hq).add("num_kv_heads", hkv).add("head_dim", D)
                        .add("time_s", t.per_op_s).add("kv_bytes", kv_bytes).add("time_over_bf16", ratio).str());
      std::printf("%-9s %-5s %2d %5d %6d %11.2f %12zu %8.1f %8.3f\n", kv_name<KV>(), KvInfo<KV>::conv, KV::kUnroll, B,
                  C, t.per_op_s * 1e6, kv_bytes,
                  kv_bytes / t.per_op_s / 1e9, ratio);
      std::fflush(stdout);
    }
  free_kv(kv);
}

}  // namespace

void run_attention_decode_kv(const Args& a) {
  const int hq = 32, hkv = 8, D = kHeadDim, bs = 16;
  std::vector<int> batches = {1, 16, 64, 256}, contexts = {512, 2048, 8192};
  if (a.quick) {
    batches = {1, 64};
    contexts = {512, 8192};
  }
  size_t pool_tokens = 0;
  for (int B : batches)
    for (int C : contexts) pool_tokens = std::max(pool_tokens, (size_t)B * C);
  pool_tokens = round_up(std::max(pool_tokens, (size_t)(2 * kRotateBytes / (hkv * D * 2))), 64);
  const int maxB = *std::max_element(batches.begin(), batches.end());
  __nv_bfloat16 *q, *out;
  CK(cudaMalloc(&q, (size_t)maxB * hq * D * 2));
  CK(cudaMalloc(&out, (size_t)maxB * hq * D * 2));
  fill_uniform_bf16(q, (size_t)maxB * hq * D, -1.f, 1.f, 63);
  DecodeBufs w = alloc_decode_bufs(batches, contexts, hq, hkv);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  bool ok = true;
  auto check = [&](const char* name, double err) {
    // bf16 output rounding bounds what any format can reach (~4e-3 relative).
    std::printf("check paged decode kv=%s: rel_err %.3g %s\n", name, err, err < 1e-2 ? "PASS" : "FAIL");
    ok = ok && err < 1e-2;
  };
  for (int part : {64, 512}) {
    check("bf16", check_decode_kv<KvBf16>(w, s, bs, part));
    check("fp8_e4m3", check_decode_kv<KvFp8>(w, s, bs, part));
    check("int8", check_decode_kv<KvInt8>(w, s, bs, part));
    check("int4", check_decode_kv<KvInt4>(w, s, bs, part));
    check("fp8_e4m3 cvt", check_decode_kv<KvFp8Cvt>(w, s, bs, part));
    check("int8 cvt", check_decode_kv<KvInt8Cvt>(w, s, bs, part));
    check("int4 cvt", check_decode_kv<KvInt4Cvt>(w, s, bs, part));
  }
  std::vector<std::string> rec;
  std::map<std::pair<int, int>, double> bf16_time;
  std::mt19937 rng(77);
  std::printf("%-9s %-5s %2s %5s %6s %11s %12s %8s %8s\n", "kv", "conv", "un", "batch", "ctx", "time_us", "kv_bytes", "GB/s",
              "vs_bf16");
  // Every quantized format in both conversions and at 4 and 8 tokens in flight per lane group: the
  // fastest of the four is the kernel's figure for that format (servesim calibrate reads the minimum).
  auto both_unrolls = [&](auto tag) {
    using KV = decltype(tag);
    time_format<KvUnroll<KV, 4>>(batches, contexts, bs, pool_tokens, q, out, w, s, bf16_time, rec, rng);
    time_format<KvUnroll<KV, 8>>(batches, contexts, bs, pool_tokens, q, out, w, s, bf16_time, rec, rng);
  };
  time_format<KvBf16>(batches, contexts, bs, pool_tokens, q, out, w, s, bf16_time, rec, rng);
  both_unrolls(KvFp8{});
  both_unrolls(KvFp8Cvt{});
  both_unrolls(KvInt8{});
  both_unrolls(KvInt8Cvt{});
  both_unrolls(KvInt4{});
  both_unrolls(KvInt4Cvt{});
  CK(cudaStreamDestroy(s));
  for (void* p : {(void*)q, (void*)out, (void*)w.m, (void*)w.l, (void*)w.o}) CK(cudaFree(p));
  write_section(a.out, "attention_decode_kv", json_array(rec));
  if (!ok) {
    std::fprintf(stderr, "attention_decode_kv: a correctness check failed\n");
    std::exit(1);
  }
}

// ---------------------------------------------------------------- one CTA per query head (MMHA)
// TensorRT-LLM decodes Llama-4's chunked-attention layers with masked_multihead_attention (XQA, its
// grouped kernel, refuses chunked attention): one CTA per (query head, sequence), so the group's
// hq / hkv CTAs each stream their kv head's pages again. Whether those re-reads hit L2 decides
// whether the layer costs one read of the cache or up to hq / hkv reads. Our kernel stands in for
// both: `grouped` is k_paged_decode<G = hq / hkv> (each byte read once); `per_head` is
// k_paged_decode<1> with CTA y reading kv head y / group, so a group's CTAs of one partition are
// `parts` apart in launch order and resident together (MMHA's grid (heads, batch, tiles) puts them
// side by side); `per_head_far` is the same with the group's re-reads a whole read of the cache
// apart (passes), so they cannot hit L2: the no-reuse bound. Same cache, block table and
// split-K (choose_part) for all three. Group 1 (grouped only: one query head per kv head, G = 1)
// is the floor: one read of the cache by the per-head kernel. Section attention_decode_mmha.

namespace {

enum class Form { grouped, per_head, per_head_far };
const char* form_name(Form f) {
  return f == Form::grouped ? "grouped" : f == Form::per_head ? "per_head" : "per_head_far";
}

template <class KV>
void launch_decode_form(Form form, const __nv_bfloat16* q, const void* kc, const void* vc, const int* bt, int max_blocks,
                        const int* seq_lens, int B, int hq, int hkv, int bs, int max_ctx, int part,
                        __nv_bfloat16* out, DecodeBufs& w, cudaStream_t s, KvScales kvs) {
  const int max_parts = decode_parts(w, B, hq, max_ctx, part), group = hq / hkv;
  auto go = [&](auto g, int passes) {
    launch_paged_decode_g<decltype(g)::value, KV>(q, (long long)hq * kHeadDim, kc, vc, bt, max_blocks, seq_lens, B, hq,
                                                  hkv, bs, max_parts, part, out, w.m, w.l, w.o, s, kvs, passes);
  };
  if (form != Form::grouped || group == 1) go(std::integral_constant<int, 1>{}, form == Form::per_head_far ? group : 1);
  else if (group == 4) go(std::integral_constant<int, 4>{}, 1);
  else if (group == 5) go(std::integral_constant<int, 5>{}, 1);
  else if (group == 8) go(std::integral_constant<int, 8>{}, 1);
  else {
    std::fprintf(stderr, "grouped decode is instantiated for 1, 4, 5 and 8 query heads per kv head only\n");
    std::exit(1);
  }
}

// Group 1 has one form: its grouped and per-head kernels are the same launch. Group 16 (Qwen3-235B's
// 64 / 4 heads, MMHA's form if its XQA refused the model) has no grouped instantiation (its shared
// scores and partial sums would not fit): per-head forms only, read against the group-1 floor.
std::vector<Form> forms_of(int group) {
  if (group == 1) return {Form::grouped};
  if (group > 8) return {Form::per_head, Form::per_head_far};
  return {Form::grouped, Form::per_head, Form::per_head_far};
}

}  // namespace

void run_attention_decode_mmha(const Args& a) {
  using Fp8 = KvUnroll<KvFp8Cvt, 4>;  // the fastest fp8 variant at batch >= 64 in attention_decode_kv (H100)
  const int hkv = 8, D = kHeadDim, bs = 32;  // TensorRT-LLM's default tokens_per_block
  // Maverick / Scout (40 / 8 heads), Qwen3-235B (64 / 4: group 16, per-head forms only), group 8,
  // Llama-3-8B's 4 (attention_decode_kv), and the floor.
  std::vector<int> groups = {1, 5, 16, 8, 4}, batches = {64, 128, 256, 512}, contexts = {512, 1024, 2048, 4096};
  if (a.quick) {
    groups = {1, 5};
    batches = {64, 512};
    contexts = {512, 4096};
  }
  const double budget_s = a.quick ? 30 : 170;  // soft: points after it are skipped and listed
  const auto t_start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };
  const int maxB = *std::max_element(batches.begin(), batches.end());
  const int maxC = *std::max_element(contexts.begin(), contexts.end());
  const int maxG = *std::max_element(groups.begin(), groups.end());
  // One pool per format holding the largest working set, and at least 2 x kRotateBytes of fp8, so
  // rotations over disjoint regions keep every repetition's cache out of L2.
  size_t pool_tokens = round_up(std::max((size_t)maxB * maxC, (size_t)(2 * kRotateBytes / (hkv * D))), 64);
  // fp8 holds values in [-1, 1) with tensor scale 1 (DeviceKv::scales), as in attention_decode_kv.
  DeviceKv kv16 = alloc_kv<KvBf16>(pool_tokens * hkv, 81), kv8 = alloc_kv<Fp8>(pool_tokens * hkv, 91);
  __nv_bfloat16 *q, *out;
  CK(cudaMalloc(&q, (size_t)maxB * maxG * hkv * D * 2));
  CK(cudaMalloc(&out, (size_t)maxB * maxG * hkv * D * 2));
  fill_uniform_bf16(q, (size_t)maxB * maxG * hkv * D, -1.f, 1.f, 63);
  DecodeBufs w = alloc_decode_bufs(batches, contexts, maxG * hkv, hkv);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // Every form, group and format against the double-precision reference, split (64) and not (512).
  bool ok = true;
  std::vector<std::string> checks;
  auto check_all = [&](auto tag) {
    using KV = decltype(tag);
    for (int g : groups)
      for (Form f : forms_of(g))
        for (int part : {64, 512}) {
          const double err = check_decode_kv<KV>(
              w, s, bs, part, g * hkv,
              [&](const __nv_bfloat16* cq, const void* k, const void* v, const int* table, int nb, const int* lens,
                  int B, int max_ctx, int p, __nv_bfloat16* o, KvScales kvs) {
                launch_decode_form<KV>(f, cq, k, v, table, nb, lens, B, g * hkv, hkv, bs, max_ctx, p, o, w, s, kvs);
              });
          const bool pass = err < 1e-2;  // bf16 output rounding is ~4e-3
          ok = ok && pass;
          std::printf("check %-12s group %d kv=%-8s part %3d: rel_err %.3g %s\n", form_name(f), g, kv_name<KV>(), part,
                      err, pass ? "PASS" : "FAIL");
          checks.push_back(JObj().add("form", form_name(f)).add("group", g).add("kv_dtype", kv_name<KV>())
                               .add("part_size", part).add("rel_err", err).add("tolerance", 1e-2).add("pass", pass).str());
        }
  };
  check_all(KvBf16{});
  check_all(Fp8{});

  std::vector<std::string> rec, skipped;
  auto write_json = [&] {
    const Device& d = device();
    write_section(a.out, "attention_decode_mmha",
                  JObj().add("gpu", std::string(d.prop.name)).add("sm_count", d.sm_count)
                      .add("l2_bytes", (long long)d.l2_bytes).add("block_size", bs).add("num_kv_heads", hkv)
                      .add("head_dim", D).add("budget_s", budget_s).add("seconds", elapsed())
                      .add_raw("checks", json_array(checks)).add_raw("records", json_array(rec))
                      .add_raw("skipped", json_array(skipped)).str());
  };
  std::mt19937 rng(88);
  std::printf("%-12s %2s %-8s %5s %6s %4s %11s %12s %8s %9s\n", "form", "g", "kv", "batch", "ctx", "part", "time_us",
              "kv_bytes", "GB/s", "/grouped");
  for (int g : groups) {
    const int hq = g * hkv;
    for (int B : batches)
      for (int C : contexts) {
        const int nb = (C + bs - 1) / bs, part = choose_part(B, hkv, C);
        const size_t need = (size_t)B * nb, pool_blocks = pool_tokens / bs;
        // Enough disjoint tables for the smaller (fp8) working set; bf16 uses the first ones.
        const int nrot_max = std::max(1, std::min<int>(rotation_count((size_t)B * C * hkv * D * 2), (int)(pool_blocks / need)));
        int *d_tables, *d_lens;
        upload_tables(B, nb, C, nrot_max, rng, d_tables, d_lens);
        auto time_formats = [&](auto tag, const DeviceKv& kv) {
          using KV = decltype(tag);
          const size_t kv_bytes = (size_t)B * C * hkv * D * KV::kBits / 8 * 2;  // K and V, one read
          const int nrot = std::max(1, std::min<int>(rotation_count(kv_bytes), (int)(pool_blocks / need)));
          double grouped_s = NAN;
          for (Form f : forms_of(g)) {
            if (elapsed() > budget_s) {
              skipped.push_back(JObj().add("form", form_name(f)).add("group", g).add("kv_dtype", kv_name<KV>())
                                    .add("batch", B).add("context", C).str());
              continue;
            }
            const TimeResult t = time_op(
                s,
                [&](cudaStream_t st, int r) {
                  launch_decode_form<KV>(f, q, kv.k, kv.v, d_tables + (size_t)r * need, nb, d_lens, B, hq, hkv, bs, C,
                                         part, out, w, st, kv.scales());
                },
                nrot);
            if (f == Form::grouped) grouped_s = t.per_op_s;
            const double ratio = t.per_op_s / grouped_s, gbs = kv_bytes / t.per_op_s / 1e9;
            JObj r = JObj().add("form", form_name(f)).add("group", g).add("num_q_heads", hq)
                         .add("kv_dtype", kv_name<KV>()).add("conversion", KvInfo<KV>::conv).add("unroll", KV::kUnroll)
                         .add("batch", B).add("context", C).add("part_size", part).add("rotations", nrot)
                         .add("time_us", t.per_op_s * 1e6).add("kv_bytes", kv_bytes).add("gb_per_s", gbs);
            if (std::isfinite(ratio)) r.add("time_over_grouped", ratio);  // no grouped form at group 16
            rec.push_back(r.str());
            std::printf("%-12s %2d %-8s %5d %6d %4d %11.2f %12zu %8.1f %9.3f\n", form_name(f), g, kv_name<KV>(), B, C,
                        part, t.per_op_s * 1e6, kv_bytes, gbs, ratio);
            std::fflush(stdout);
          }
        };
        time_formats(KvBf16{}, kv16);
        time_formats(Fp8{}, kv8);
        CK(cudaFree(d_tables));
        CK(cudaFree(d_lens));
      }
    write_json();  // partial results survive a later failure or timeout
  }
  if (!skipped.empty()) std::printf("%zu points skipped (time budget %.0f s)\n", skipped.size(), budget_s);
  std::printf("attention_decode_mmha: %.1f s\n", elapsed());
  CK(cudaStreamDestroy(s));
  free_kv(kv16);
  free_kv(kv8);
  for (void* p : {(void*)q, (void*)out, (void*)w.m, (void*)w.l, (void*)w.o}) CK(cudaFree(p));
  write_json();
  if (!ok) {
    std::fprintf(stderr, "attention_decode_mmha: a correctness check failed\n");
    std::exit(1);
  }
}

}  // namespace cal
