// GEMM sweep through cuBLASLt (bf16, fp16, fp8 e4m3 -> bf16, int8 -> int32) over token count M
// and the linear-layer shapes of Llama-2/3 7-8B and 70B, plus the contention section
// (two kernels sharing one GPU). Feeds servesim's per-dtype GEMM efficiency tables.
#include "common.cuh"
#include "gemm_lt.cuh"

#include <cuda_fp8.h>

#include <chrono>
#include <cmath>

namespace cal {

struct Shape {
  int n, k;
  const char* what;
};

// (N, K) of the linear layers, C[M,N] = A[M,K] W[N,K]^T. Duplicates across models are listed once.
static const std::vector<Shape> kShapes = {
    {6144, 4096, "llama3-8b qkv"},        {4096, 4096, "llama3-8b o / llama2-7b o / square"},
    {28672, 4096, "llama3-8b gate_up"},   {4096, 14336, "llama3-8b down"},
    {128256, 4096, "llama3-8b lm_head"},  {12288, 4096, "llama2-7b qkv"},
    {22016, 4096, "llama2-7b gate_up"},   {4096, 11008, "llama2-7b down"},
    {32000, 4096, "llama2-7b lm_head"},   {10240, 8192, "70b qkv"},
    {8192, 8192, "70b o / square"},       {57344, 8192, "70b gate_up"},
    {8192, 28672, "70b down"},            {128256, 8192, "llama3-70b lm_head"},
    {32000, 8192, "llama2-70b lm_head"},  {1024, 1024, "square"},
    {2048, 2048, "square"},               {16384, 16384, "square"},
    // More families (config.json of each on the Hugging Face Hub), so shapes servesim is asked
    // about have calibrated neighbours: Qwen2-7B, Phi-3-mini, Llama-2-13B, Qwen3-8B,
    // Mistral-Small-24B, and the experts of Qwen3-30B-A3B and DeepSeek-V3.
    {4608, 3584, "qwen2-7b qkv"},         {3584, 3584, "qwen2-7b o"},
    {37888, 3584, "qwen2-7b gate_up"},    {3584, 18944, "qwen2-7b down"},
    {152064, 3584, "qwen2-7b lm_head"},   {9216, 3072, "phi3-mini qkv"},
    {3072, 3072, "phi3-mini o"},          {16384, 3072, "phi3-mini gate_up"},
    {3072, 8192, "phi3-mini down"},       {15360, 5120, "llama2-13b qkv"},
    {5120, 5120, "llama2-13b o"},         {27648, 5120, "llama2-13b gate_up"},
    {5120, 13824, "llama2-13b down"},     {24576, 4096, "qwen3-8b gate_up"},
    {4096, 12288, "qwen3-8b down"},       {6144, 5120, "mistral-small-24b qkv"},
    {5120, 4096, "mistral-small-24b o"},  {65536, 5120, "mistral-small-24b gate_up"},
    {5120, 32768, "mistral-small-24b down"}, {1536, 2048, "qwen3-30b-a3b expert gate_up"},
    {2048, 768, "qwen3-30b-a3b expert down"}, {4096, 7168, "deepseek-v3 expert gate_up"},
    {7168, 2048, "deepseek-v3 expert down"},
    // The tensor-parallel shards of the models in the vLLM 0.15 runs servesim is checked against
    // (inference-sim/training: Llama-2-70B at TP4, CodeLlama-34B and Mixtral-8x7B at TP2; Hub
    // config.json: 70B hidden 8192, 64/8 heads, FFN 28672; CodeLlama-34B hidden 8192, 64/8 heads,
    // FFN 22016; Mixtral hidden 4096, 32/8 heads, expert FFN 14336; vocab 32000). Column-parallel
    // layers split N, row-parallel ones split K; the LM head splits the vocabulary.
    {2560, 8192, "llama2-70b tp4 qkv"},   {8192, 2048, "llama2-70b tp4 o"},
    {14336, 8192, "llama2-70b tp4 gate_up"}, {8192, 7168, "llama2-70b tp4 down"},
    {8000, 8192, "llama2-70b tp4 lm_head"}, {5120, 8192, "codellama-34b tp2 qkv"},
    {8192, 4096, "codellama-34b tp2 o"},  {22016, 8192, "codellama-34b tp2 gate_up"},
    {8192, 11008, "codellama-34b tp2 down"}, {16000, 8192, "codellama-34b tp2 lm_head"},
    {3072, 4096, "mixtral tp2 qkv"},      {4096, 2048, "mixtral tp2 o"},
    {14336, 4096, "mixtral tp2 expert gate_up"}, {4096, 7168, "mixtral tp2 expert down"},
    {16000, 4096, "mixtral / llama2-7b tp2 lm_head"},
};

static float host_val(GemmDtype dt, const void* p, size_t i) {
  switch (dt) {
    case GemmDtype::bf16: return __bfloat162float(((const __nv_bfloat16*)p)[i]);
    case GemmDtype::fp16: return __half2float(((const __half*)p)[i]);
    case GemmDtype::fp8: return (float)((const __nv_fp8_e4m3*)p)[i];
    default: return (float)((const int8_t*)p)[i];
  }
}
static double host_out(GemmDtype dt, const void* p, size_t i) {
  switch (dt) {
    case GemmDtype::fp16: return __half2float(((const __half*)p)[i]);
    case GemmDtype::int8: return ((const int32_t*)p)[i];
    default: return __bfloat162float(((const __nv_bfloat16*)p)[i]);
  }
}

static void fill_operand(GemmDtype dt, void* p, size_t n, uint64_t seed) {
  switch (dt) {
    case GemmDtype::bf16: fill_uniform_bf16((__nv_bfloat16*)p, n, -1.f, 1.f, seed); break;
    case GemmDtype::fp16: fill_uniform_f16((__half*)p, n, -1.f, 1.f, seed); break;
    case GemmDtype::fp8: fill_uniform_fp8e4m3(p, n, -1.f, 1.f, seed); break;
    default: fill_int8((int8_t*)p, n, -127, 127, seed); break;
  }
}

// Small GEMM against a float64 host reference: proves the layout convention (C = A W^T) and
// that each dtype's descriptor setup computes what we think it does.
static double check_gemm(cublasLtHandle_t h, GemmDtype dt, const float* one, void* ws, cudaStream_t s) {
  const int M = 8, N = 256, K = 512;
  void *A, *W, *C;
  CK(cudaMalloc(&A, (size_t)M * K * in_elem_bytes(dt)));
  CK(cudaMalloc(&W, (size_t)N * K * in_elem_bytes(dt)));
  CK(cudaMalloc(&C, (size_t)M * N * out_elem_bytes(dt)));
  fill_operand(dt, A, (size_t)M * K, 101);
  fill_operand(dt, W, (size_t)N * K, 102);
  CK(cudaMemset(C, 0xFF, (size_t)M * N * out_elem_bytes(dt)));  // poison: NaN for bf16/fp16
  LtGemm g(h, dt, M, N, K, one);
  if (!g.ok()) return NAN;
  g.run(A, W, C, ws, s);
  CK(cudaStreamSynchronize(s));
  std::vector<char> a((size_t)M * K * in_elem_bytes(dt)), w((size_t)N * K * in_elem_bytes(dt)),
      c((size_t)M * N * out_elem_bytes(dt));
  CK(cudaMemcpy(a.data(), A, a.size(), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(w.data(), W, w.size(), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(c.data(), C, c.size(), cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += (double)host_val(dt, a.data(), (size_t)m * K + k) * host_val(dt, w.data(), (size_t)n * K + k);
      double got = host_out(dt, c.data(), (size_t)m * N + n);
      if (!std::isfinite(got)) return INFINITY;
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
  CK(cudaFree(A));
  CK(cudaFree(W));
  CK(cudaFree(C));
  return std::sqrt(num / den);
}

void run_gemm(const Args& a) {
  const Device& d = device();
  cublasLtHandle_t h;
  CKB(cublasLtCreate(&h));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* ws;
  float* one;
  CK(cudaMalloc(&ws, kLtWorkspaceBytes));
  CK(cudaMalloc(&one, sizeof(float)));
  fill_uniform_f32(one, 1, 1.f, 1.f, 0);

  std::vector<int> ms = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  std::vector<Shape> shapes = kShapes;
  if (a.quick) {
    ms = {1, 16, 256, 4096};
    shapes.resize(3);
  }
  std::vector<GemmDtype> dts = {GemmDtype::bf16, GemmDtype::fp16, GemmDtype::int8};
  // fp8 tensor cores exist from Ada (8.9) and Hopper (9.0) on.
  if (d.cc_major * 10 + d.cc_minor >= 89) dts.insert(dts.begin() + 2, GemmDtype::fp8);
  else std::printf("fp8 skipped: compute capability %d.%d < 8.9\n", d.cc_major, d.cc_minor);

  size_t maxA = 0, maxW = 0, maxC = 0;
  for (auto& sh : shapes) {
    maxA = std::max(maxA, (size_t)ms.back() * sh.k * 2);
    maxW = std::max(maxW, (size_t)sh.n * sh.k * 2);
    maxC = std::max(maxC, (size_t)ms.back() * sh.n * 4);
  }
  // Each pool holds one largest operand or 2x the rotation span, whichever is larger.
  const size_t poolA = std::max(maxA, 2 * kRotateBytes), poolW = std::max(maxW, 2 * kRotateBytes),
               poolC = std::max(maxC, 2 * kRotateBytes);
  char *A, *W, *C;
  CK(cudaMalloc(&A, poolA));
  CK(cudaMalloc(&W, poolW));
  CK(cudaMalloc(&C, poolC));
  CK(cudaMemset(C, 0, poolC));

  std::vector<std::string> rec;
  // Per-dtype wall budget keeps the whole sweep to ~2-3 min on an H200 even if a dtype is slow.
  const double dtype_budget_s = a.quick ? 20 : 100;
  TimeOpts topt;
  topt.budget_s = 0.12;
  topt.max_reps = 15;
  for (GemmDtype dt : dts) {
    const char* dn = dtype_name(dt);
    double err = check_gemm(h, dt, one, ws, s);
    std::printf("check gemm %s: rel_err %.3g %s\n", dn, err,
                (err < (dt == GemmDtype::fp8 ? 2e-2 : 1e-2)) ? "PASS" : "FAIL");
    fill_operand(dt, A, poolA / in_elem_bytes(dt) / 1, 1000 + (int)dt);
    fill_operand(dt, W, poolW / in_elem_bytes(dt), 2000 + (int)dt);
    CK(cudaDeviceSynchronize());
    auto t_start = std::chrono::steady_clock::now();
    int skipped = 0;
    std::printf("%-5s %6s %7s %6s %11s %9s\n", "dtype", "m", "n", "k", "time_us", "TFLOP/s");
    for (auto& sh : shapes) {
      for (int m : ms) {
        double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
        if (elapsed > dtype_budget_s) {
          ++skipped;
          continue;
        }
        const size_t ab = round_up((size_t)m * sh.k * in_elem_bytes(dt), 256);
        const size_t wb = round_up((size_t)sh.n * sh.k * in_elem_bytes(dt), 256);
        const size_t cb = round_up((size_t)m * sh.n * out_elem_bytes(dt), 256);
        int nrot = rotation_count(ab + wb + cb);
        nrot = std::min<int>({nrot, (int)(poolA / ab), (int)(poolW / wb), (int)(poolC / cb)});
        LtGemm g(h, dt, m, sh.n, sh.k, one);
        if (!g.ok()) {
          std::printf("%-5s %6d %7d %6d  no cuBLASLt algorithm, skipped\n", dn, m, sh.n, sh.k);
          continue;
        }
        TimeResult t = time_op(
            s, [&](cudaStream_t st, int r) { g.run(A + r * ab, W + r * wb, C + r * cb, ws, st); }, nrot, topt);
        const double flops = 2.0 * m * sh.n * sh.k;
        rec.push_back(JObj().add("dtype", dn).add("m", m).add("n", sh.n).add("k", sh.k).add("time_s", t.per_op_s)
                          .add("flops_per_s", flops / t.per_op_s).str());
        std::printf("%-5s %6d %7d %6d %11.2f %9.1f\n", dn, m, sh.n, sh.k, t.per_op_s * 1e6, flops / t.per_op_s / 1e12);
      }
    }
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    std::printf("dtype %s: %.1f s%s\n", dn, el,
                skipped ? (", " + std::to_string(skipped) + " points skipped (time budget)").c_str() : "");
    // Written after each dtype so a later failure keeps what was measured.
    write_section(a.out, "gemm", json_array(rec));
    std::fflush(stdout);
  }
  CK(cudaFree(A));
  CK(cudaFree(W));
  CK(cudaFree(C));
  CK(cudaFree(ws));
  CK(cudaFree(one));
  CK(cudaStreamDestroy(s));
  CKB(cublasLtDestroy(h));
}

// ---------------------------------------------------------------- contention
// Runs fa on sa and fb on sb, each alone and then both released by one event; "together"
// times are from the common start to each stream's end.
static void contend(const char* name, const std::function<void(cudaStream_t)>& fa,
                    const std::function<void(cudaStream_t)>& fb, std::vector<std::string>& rec) {
  cudaStream_t sa, sb;
  CK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  cudaEvent_t e0, ea, eb;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&ea));
  CK(cudaEventCreate(&eb));
  const int reps = 9;
  auto alone = [&](const std::function<void(cudaStream_t)>& f, cudaStream_t st) {
    f(st);
    f(st);
    CK(cudaStreamSynchronize(st));
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      CK(cudaEventRecord(e0, st));
      f(st);
      CK(cudaEventRecord(ea, st));
      CK(cudaEventSynchronize(ea));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, ea));
      t.push_back(ms * 1e-3);
    }
    return median(t);
  };
  double a_alone = alone(fa, sa), b_alone = alone(fb, sb);
  std::vector<double> ta, tb;
  for (int i = 0; i < reps + 1; ++i) {
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0, sa));
    CK(cudaStreamWaitEvent(sb, e0, 0));
    fa(sa);
    fb(sb);
    CK(cudaEventRecord(ea, sa));
    CK(cudaEventRecord(eb, sb));
    CK(cudaEventSynchronize(ea));
    CK(cudaEventSynchronize(eb));
    float ma, mb;
    CK(cudaEventElapsedTime(&ma, e0, ea));
    CK(cudaEventElapsedTime(&mb, e0, eb));
    if (i == 0) continue;  // warm-up
    ta.push_back(ma * 1e-3);
    tb.push_back(mb * 1e-3);
  }
  double a_tog = median(ta), b_tog = median(tb);
  CK_LAUNCH();
  auto arr = [](double x, double y) { return "[" + json_number(x) + "," + json_number(y) + "]"; };
  rec.push_back(JObj().add("case", name).add_raw("alone_s", arr(a_alone, b_alone)).add_raw("together_s", arr(a_tog, b_tog)).str());
  std::printf("%-9s alone %.3f ms, %.3f ms | together %.3f ms, %.3f ms (sum alone %.3f)\n", name, a_alone * 1e3,
              b_alone * 1e3, a_tog * 1e3, b_tog * 1e3, (a_alone + b_alone) * 1e3);
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(ea));
  CK(cudaEventDestroy(eb));
  CK(cudaStreamDestroy(sa));
  CK(cudaStreamDestroy(sb));
}

void run_contention(const Args& a) {
  const size_t cb = a.quick ? 256 * MiB : 1 * GiB;
  char *b0, *b1, *b2, *b3;
  CK(cudaMalloc(&b0, cb));
  CK(cudaMalloc(&b1, cb));
  CK(cudaMalloc(&b2, 2 * cb));
  CK(cudaMalloc(&b3, 2 * cb));
  fill_random_bits(b0, cb, 31);
  fill_random_bits(b2, 2 * cb, 32);
  std::vector<std::string> rec;
  // copy_copy: two bandwidth-bound copies of 1 GiB each.
  contend("copy_copy", [&](cudaStream_t st) { launch_copy(b0, b1, cb, st); },
          [&](cudaStream_t st) { launch_copy(b2, b3, cb, st); }, rec);

  // gemm_copy: a compute-bound bf16 GEMM (8192^3, ~1.4 ms on H200) next to a 2 GiB copy.
  const int M = a.quick ? 4096 : 8192, N = M, K = M;
  cublasLtHandle_t h;
  CKB(cublasLtCreate(&h));
  void *A, *W, *C, *ws;
  float* one;
  CK(cudaMalloc(&A, (size_t)M * K * 2));
  CK(cudaMalloc(&W, (size_t)N * K * 2));
  CK(cudaMalloc(&C, (size_t)M * N * 2));
  CK(cudaMalloc(&ws, kLtWorkspaceBytes));
  CK(cudaMalloc(&one, sizeof(float)));
  fill_uniform_f32(one, 1, 1.f, 1.f, 0);
  fill_uniform_bf16((__nv_bfloat16*)A, (size_t)M * K, -1.f, 1.f, 33);
  fill_uniform_bf16((__nv_bfloat16*)W, (size_t)N * K, -1.f, 1.f, 34);
  LtGemm g(h, GemmDtype::bf16, M, N, K, one);
  if (!g.ok()) {
    std::fprintf(stderr, "no cuBLASLt algorithm for the contention GEMM\n");
    std::exit(1);
  }
  contend("gemm_copy", [&](cudaStream_t st) { g.run(A, W, C, ws, st); },
          [&](cudaStream_t st) { launch_copy(b2, b3, 2 * cb, st); }, rec);
  CK(cudaDeviceSynchronize());
  for (void* p : {(void*)b0, (void*)b1, (void*)b2, (void*)b3, A, W, C, ws, (void*)one}) CK(cudaFree(p));
  CKB(cublasLtDestroy(h));
  write_section(a.out, "contention", json_array(rec));
}

}  // namespace cal
