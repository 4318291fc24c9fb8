// Thin cuBLASLt wrapper for the linear-layer convention servesim models:
// C[M,N] = A[M,K] · W[N,K]^T with row-major activations A (M = tokens) and an nn.Linear-style
// weight W stored [out=N, in=K]. Used by the GEMM sweep, the dequant+GEMM path and contention.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#define CKB(call)                                                                      \
  do {                                                                                 \
    cublasStatus_t st__ = (call);                                                      \
    if (st__ != CUBLAS_STATUS_SUCCESS) {                                               \
      std::fprintf(stderr, "cuBLAS error %d at %s:%d: %s\n", (int)st__, __FILE__, __LINE__, \
                   #call);                                                             \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

namespace cal {

enum class GemmDtype { bf16, fp16, fp8, int8 };

inline const char* dtype_name(GemmDtype d) {
  switch (d) {
    case GemmDtype::bf16: return "bf16";
    case GemmDtype::fp16: return "fp16";
    case GemmDtype::fp8: return "fp8";
    case GemmDtype::int8: return "int8";
  }
  return "?";
}
inline size_t in_elem_bytes(GemmDtype d) { return (d == GemmDtype::fp8 || d == GemmDtype::int8) ? 1 : 2; }
// fp8 writes bf16 (what serving engines do after a scaled fp8 GEMM); int8 accumulates into int32.
inline size_t out_elem_bytes(GemmDtype d) { return d == GemmDtype::int8 ? 4 : 2; }

constexpr size_t kLtWorkspaceBytes = 32ull << 20;  // cuBLAS's recommendation for Hopper

class LtGemm {
 public:
  // scale_one: device pointer to a float 1.0, used as the fp8 A/B scale (per-tensor scaling).
  LtGemm(cublasLtHandle_t h, GemmDtype dt, int M, int N, int K, const float* scale_one)
      : h_(h), dt_(dt) {
    cudaDataType_t ab, cd, scale;
    cublasComputeType_t comp;
    switch (dt) {
      case GemmDtype::bf16: ab = cd = CUDA_R_16BF; comp = CUBLAS_COMPUTE_32F; scale = CUDA_R_32F; break;
      case GemmDtype::fp16: ab = cd = CUDA_R_16F; comp = CUBLAS_COMPUTE_32F; scale = CUDA_R_32F; break;
      case GemmDtype::fp8: ab = CUDA_R_8F_E4M3; cd = CUDA_R_16BF; comp = CUBLAS_COMPUTE_32F; scale = CUDA_R_32F; break;
      default: ab = CUDA_R_8I; cd = CUDA_R_32I; comp = CUBLAS_COMPUTE_32I; scale = CUDA_R_32I; break;
    }
    CKB(cublasLtMatmulDescCreate(&op_, comp, scale));
    // Column-major view: C^T[N,M] = W[N,K] (stored col-major K x N, so op T) · A^T (K x M, op N).
    // This "TN" form is the one cuBLASLt requires for fp8 and prefers for int8 IMMA.
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CKB(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CKB(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (dt == GemmDtype::fp8) {
      CKB(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_one, sizeof(scale_one)));
      CKB(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_one, sizeof(scale_one)));
      // Inference stacks (TensorRT-LLM, vLLM via cuBLASLt/CUTLASS) run fp8 forward GEMMs with
      // fast accumulation; that is the rate a server sees.
      int8_t fast = 1;
      CKB(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
    }
    CKB(cublasLtMatrixLayoutCreate(&a_, ab, K, N, K));
    CKB(cublasLtMatrixLayoutCreate(&b_, ab, K, M, K));
    CKB(cublasLtMatrixLayoutCreate(&c_, cd, N, M, N));
    cublasLtMatmulPreference_t pref;
    CKB(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = kLtWorkspaceBytes;
    CKB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h_, op_, a_, b_, c_, c_, pref, 1, &heur_, &found);
    CKB(cublasLtMatmulPreferenceDestroy(pref));
    // Take the heuristic's first choice, as frameworks do (no per-shape autotuning).
    ok_ = (st == CUBLAS_STATUS_SUCCESS && found > 0);
  }
  ~LtGemm() {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatmulDescDestroy(op_);
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  bool ok() const { return ok_; }

  void run(const void* A, const void* W, void* C, void* workspace, cudaStream_t s) const {
    const float alpha_f = 1.f, beta_f = 0.f;
    const int32_t alpha_i = 1, beta_i = 0;
    const void* alpha = dt_ == GemmDtype::int8 ? (const void*)&alpha_i : (const void*)&alpha_f;
    const void* beta = dt_ == GemmDtype::int8 ? (const void*)&beta_i : (const void*)&beta_f;
    CKB(cublasLtMatmul(h_, op_, alpha, W, a_, A, b_, beta, C, c_, C, c_, &heur_.algo, workspace,
                       kLtWorkspaceBytes, s));
  }

 private:
  cublasLtHandle_t h_;
  GemmDtype dt_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulHeuristicResult_t heur_{};
  bool ok_ = false;
};

}  // namespace cal
