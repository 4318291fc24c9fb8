// Decode attention over a paged KV cache (vLLM-style block table gather), grouped-query, bf16,
// split-K ("flash-decoding") when a sequence alone cannot fill the GPU. Gives servesim the decode
// attention time against batch x context x block_size, i.e. how close the KV stream gets to HBM
// bandwidth. Prefill attention is measured separately with PyTorch SDPA (attention_prefill.py).
#include "common.cuh"
#include "kernels.cuh"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace cal {

// Kernels (k_paged_decode, k_decode_reduce, launch_paged_decode, choose_part) live in
// kernels.cuh, shared with reference/fused_ops.cu.

struct DecodeBufs {
  float *m = nullptr, *l = nullptr, *o = nullptr;
  size_t cap_parts_total = 0;  // B * hq * max_parts
};

// Splits a sequence only when the grid would otherwise leave SMs idle (kernels.cuh).
static int choose_part(int B, int hkv, int max_ctx) { return choose_part(B, hkv, max_ctx, device().sm_count); }

static void launch_decode(const __nv_bfloat16* q, const __nv_bfloat16* kc, const __nv_bfloat16* vc, const int* bt,
                          int max_blocks, const int* seq_lens, int B, int hq, int hkv, int bs, int max_ctx, int part,
                          __nv_bfloat16* out, DecodeBufs& w, cudaStream_t s) {
  const int max_parts = (max_ctx + part - 1) / part;
  if ((size_t)B * hq * max_parts > w.cap_parts_total) {
    std::fprintf(stderr, "decode workspace too small\n");
    std::exit(1);
  }
  if (hq / hkv != 4) {
    std::fprintf(stderr, "only 4 query heads per kv head are instantiated\n");
    std::exit(1);
  }
  launch_paged_decode(q, (long long)hq * kHeadDim, kc, vc, bt, max_blocks, seq_lens, B, hq, hkv, bs, max_parts, part, out,
                      w.m, w.l, w.o, s);
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
