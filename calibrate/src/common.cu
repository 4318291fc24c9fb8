// Implementation of the shared plumbing declared in common.cuh: device query, random fills,
// the graph-replay timer and the JSON writer.
#include "common.cuh"

#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace cal {

const Device& device() {
  static Device d = [] {
    Device x;
    CK(cudaGetDevice(&x.id));
    CK(cudaGetDeviceProperties(&x.prop, x.id));
    x.sm_count = x.prop.multiProcessorCount;
    x.cc_major = x.prop.major;
    x.cc_minor = x.prop.minor;
    x.l2_bytes = x.prop.l2CacheSize;
    return x;
  }();
  return d;
}

int rotation_count(size_t bytes, int max_copies) {
  if (bytes == 0) return 1;
  size_t n = (kRotateBytes + bytes - 1) / bytes;
  return (int)std::max<size_t>(1, std::min<size_t>(n, (size_t)max_copies));
}

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ float u01(uint64_t seed, size_t i) {
  return (float)(mix64(seed * 0x100000001B3ull ^ (uint64_t)i) >> 40) * (1.0f / 16777216.0f);
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_float(float v) { return __float2half(v); }
template <> __device__ __forceinline__ float from_float(float v) { return v; }
template <> __device__ __forceinline__ __nv_fp8_e4m3 from_float(float v) { return __nv_fp8_e4m3(v); }

template <typename T>
__global__ void k_fill_uniform(T* p, size_t n, float lo, float hi, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = from_float<T>(lo + (hi - lo) * u01(seed, i));
}

__global__ void k_fill_bits(uint32_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t v = (uint32_t)mix64(seed * 0x100000001B3ull ^ (uint64_t)i);
    p[i] = v ? v : 0x5A5A5A5Au;
  }
}

__global__ void k_fill_int_f16(__half* p, size_t n, int lo, int hi, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    int v = lo + (int)(u01(seed, i) * (hi - lo + 1));
    p[i] = __int2half_rn(min(v, hi));
  }
}
__global__ void k_fill_int8(int8_t* p, size_t n, int lo, int hi, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    int v = lo + (int)(u01(seed, i) * (hi - lo + 1));
    p[i] = (int8_t)min(v, hi);
  }
}

static unsigned fill_blocks(size_t n) {
  size_t b = (n + 255) / 256;
  return (unsigned)std::max<size_t>(1, std::min<size_t>(b, (size_t)device().sm_count * 32));
}

void fill_uniform_bf16(__nv_bfloat16* p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s) {
  k_fill_uniform<<<fill_blocks(n), 256, 0, s>>>(p, n, lo, hi, seed);
  CK_LAUNCH();
}
void fill_uniform_f16(__half* p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s) {
  k_fill_uniform<<<fill_blocks(n), 256, 0, s>>>(p, n, lo, hi, seed);
  CK_LAUNCH();
}
void fill_uniform_f32(float* p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s) {
  k_fill_uniform<<<fill_blocks(n), 256, 0, s>>>(p, n, lo, hi, seed);
  CK_LAUNCH();
}
void fill_uniform_fp8e4m3(void* p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s) {
  k_fill_uniform<<<fill_blocks(n), 256, 0, s>>>((__nv_fp8_e4m3*)p, n, lo, hi, seed);
  CK_LAUNCH();
}
void fill_random_bits(void* p, size_t bytes, uint64_t seed, cudaStream_t s) {
  size_t n = bytes / 4;
  k_fill_bits<<<fill_blocks(n), 256, 0, s>>>((uint32_t*)p, n, seed);
  CK_LAUNCH();
  if (bytes % 4) CK(cudaMemsetAsync((char*)p + n * 4, 0x5A, bytes % 4, s));
}
void fill_int_f16(__half* p, size_t n, int lo, int hi, uint64_t seed, cudaStream_t s) {
  k_fill_int_f16<<<fill_blocks(n), 256, 0, s>>>(p, n, lo, hi, seed);
  CK_LAUNCH();
}
void fill_int8(int8_t* p, size_t n, int lo, int hi, uint64_t seed, cudaStream_t s) {
  k_fill_int8<<<fill_blocks(n), 256, 0, s>>>(p, n, lo, hi, seed);
  CK_LAUNCH();
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TimeResult time_op(cudaStream_t s, const std::function<void(cudaStream_t, int)>& op, int nrot,
                   const TimeOpts& o) {
  nrot = std::max(1, nrot);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  // Warm-up: module load, cuBLAS kernel selection, first-touch of every rotation buffer.
  for (int i = 0; i < std::min(nrot, 64); ++i) op(s, i);
  for (int i = 0; i < 2; ++i) op(s, i % nrot);
  CK_LAUNCH();
  CK(cudaStreamSynchronize(s));

  // Rough per-op estimate (eager; overestimates tiny kernels, which only makes K larger).
  int n_est = std::min(std::max(nrot, 2), 16);
  CK(cudaEventRecord(e0, s));
  for (int i = 0; i < n_est; ++i) op(s, i % nrot);
  CK(cudaEventRecord(e1, s));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  double est = std::max(1e-7, ms * 1e-3 / n_est);

  int k = (int)std::ceil(o.sample_s / est);
  k = std::max(k, nrot);
  k = std::max(1, std::min(k, std::max(o.max_k, nrot)));

  TimeResult r;
  r.ops_per_sample = k;
  cudaGraphExec_t exec = nullptr;
  if (o.use_graph) {
    cudaGraph_t g = nullptr;
    bool ok = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
    if (ok) {
      for (int i = 0; i < k; ++i) op(s, i % nrot);
      ok = cudaStreamEndCapture(s, &g) == cudaSuccess && g != nullptr;
    }
    if (ok) ok = cudaGraphInstantiate(&exec, g, 0) == cudaSuccess;
    if (g) cudaGraphDestroy(g);
    if (!ok) {
      // Capture is not fatal: clear the sticky-free error and time eagerly instead.
      (void)cudaGetLastError();
      exec = nullptr;
      std::fprintf(stderr, "  note: graph capture failed, timing eagerly\n");
    }
  }
  r.graph = exec != nullptr;
  auto launch_sample = [&] {
    if (exec) {
      CK(cudaGraphLaunch(exec, s));
    } else {
      for (int i = 0; i < k; ++i) op(s, i % nrot);
    }
  };
  launch_sample();  // warm the graph itself (first replay uploads it)
  CK(cudaStreamSynchronize(s));

  int reps = (int)std::ceil(o.budget_s / (est * k));
  reps = std::max(o.min_reps, std::min(o.max_reps, reps));
  std::vector<double> t;
  t.reserve(reps);
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0, s));
    launch_sample();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1e-3 / k);
  }
  CK_LAUNCH();
  if (exec) CK(cudaGraphExecDestroy(exec));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  r.per_op_s = median(t);
  r.samples = reps;
  return r;
}

// ---------------------------------------------------------------- JSON
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";  // JSON has no NaN/Inf; the fitter treats null as missing
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
static std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if ((unsigned char)c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += c;
  }
  return o;
}
void JObj::key(const char* k) {
  if (!body_.empty()) body_ += ",";
  body_ += "\"" + json_escape(k) + "\":";
}
JObj& JObj::add(const char* k, double v) { key(k); body_ += json_number(v); return *this; }
JObj& JObj::add(const char* k, long long v) { key(k); body_ += std::to_string(v); return *this; }
JObj& JObj::add(const char* k, bool v) { key(k); body_ += v ? "true" : "false"; return *this; }
JObj& JObj::add(const char* k, const std::string& v) { key(k); body_ += "\"" + json_escape(v) + "\""; return *this; }
JObj& JObj::add_raw(const char* k, const std::string& raw) { key(k); body_ += raw; return *this; }

std::string json_array(const std::vector<std::string>& items) {
  std::string o = "[";
  for (size_t i = 0; i < items.size(); ++i) o += (i ? ",\n " : "\n ") + items[i];
  return o + "\n]";
}

void write_section(const std::string& path, const std::string& section, const std::string& value_json) {
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
  f << "{\"" << section << "\": " << value_json << "}\n";
  if (!f) {
    std::fprintf(stderr, "write failed: %s\n", path.c_str());
    std::exit(1);
  }
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace cal
