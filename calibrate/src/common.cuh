// Shared plumbing for the servesim calibration microbenchmarks: error checks, random fills,
// the graph-replay timer every section uses, L2-defeating buffer rotation, and a tiny JSON writer.
// Every section binary path goes through time_op() so all numbers share one timing method.
#pragma once

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

// Any failed CUDA call aborts the section process: run_all.sh runs each section in its own
// process, so one broken section cannot take the others' results with it.
#define CK(call)                                                                        \
  do {                                                                                  \
    cudaError_t err__ = (call);                                                         \
    if (err__ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "CUDA error %s (%s) at %s:%d: %s\n", cudaGetErrorName(err__), \
                   cudaGetErrorString(err__), __FILE__, __LINE__, #call);               \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

// Checks the launch itself (bad config) right away; asynchronous faults surface at the next
// synchronising CK() call.
#define CK_LAUNCH() CK(cudaGetLastError())

namespace cal {

constexpr size_t MiB = 1ull << 20;
constexpr size_t GiB = 1ull << 30;

// Bytes each rotation sweep must cover so that consecutive timed calls miss in L2
// (H200 L2 is 50-60 MB; 256 MiB is >4x that).
constexpr size_t kRotateBytes = 256 * MiB;

struct Device {
  int id = 0;
  cudaDeviceProp prop{};
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  size_t l2_bytes = 0;
};
const Device& device();

// Number of disjoint copies of a working set of `bytes` needed to cover kRotateBytes,
// capped by `max_copies` (the memory we are willing to spend).
int rotation_count(size_t bytes, int max_copies = 512);

inline size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Random fills (hash-based, deterministic per seed): uniform in [lo, hi).
void fill_uniform_bf16(__nv_bfloat16* p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s = 0);
void fill_uniform_f16(__half* p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s = 0);
void fill_uniform_f32(float* p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s = 0);
void fill_uniform_fp8e4m3(void* p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s = 0);
// Random bytes with no zero 32-bit words (int8 GEMM operands, packed int4 weights).
void fill_random_bits(void* p, size_t bytes, uint64_t seed, cudaStream_t s = 0);
// Integers in [lo, hi] stored as fp16 (AWQ-style zero points are integers).
void fill_int_f16(__half* p, size_t n, int lo, int hi, uint64_t seed, cudaStream_t s = 0);
void fill_int8(int8_t* p, size_t n, int lo, int hi, uint64_t seed, cudaStream_t s = 0);

struct TimeOpts {
  double sample_s = 200e-6;  // each timed sample runs at least this long (event resolution ~0.5 us)
  int min_reps = 5;
  int max_reps = 25;
  double budget_s = 0.25;    // soft cap on timed work per point
  int max_k = 2048;          // most ops captured into one graph
  bool use_graph = true;
};

struct TimeResult {
  double per_op_s = 0;  // median over samples of (sample time / ops per sample)
  int ops_per_sample = 0;
  int samples = 0;
  bool graph = false;
};

// Times op(stream, rotation_index). Ops are captured K at a time into a CUDA graph and replayed,
// so tiny kernels are not measured as host launch cost (serving engines run decode in graphs too);
// the per-node gap the graph adds is part of the result. Falls back to eager launches if capture
// fails. rotation_index cycles 0..nrot-1 so successive ops touch different buffers.
TimeResult time_op(cudaStream_t s, const std::function<void(cudaStream_t, int)>& op, int nrot,
                   const TimeOpts& o = TimeOpts());

double median(std::vector<double> v);

// Minimal JSON: each record is built as an object string; a section file is
// {"<section>": [record, ...]} or {"<section>": {...}}.
class JObj {
 public:
  JObj& add(const char* k, double v);
  JObj& add(const char* k, int v) { return add(k, (long long)v); }
  JObj& add(const char* k, long long v);
  JObj& add(const char* k, size_t v) { return add(k, (long long)v); }
  JObj& add(const char* k, bool v);
  JObj& add(const char* k, const std::string& v);
  JObj& add(const char* k, const char* v) { return add(k, std::string(v)); }
  JObj& add_raw(const char* k, const std::string& raw);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const char* k);
  std::string body_;
};
std::string json_array(const std::vector<std::string>& items);
std::string json_number(double v);
void write_section(const std::string& path, const std::string& section, const std::string& value_json);

// Section entry points (one process each; see main.cu).
struct Args {
  std::string out;
  bool quick = false;  // smaller sweeps, for smoke tests
};
void run_gpu_info(const Args&);
void run_bandwidth(const Args&);
void run_host_copy(const Args&);
void run_elementwise(const Args&);
void run_gemm(const Args&);
void run_contention(const Args&);
void run_quant_gemm(const Args&);
void run_attention_decode(const Args&);
void run_attention_decode_kv(const Args&);
void run_attention_decode_mmha(const Args&);
void run_launch(const Args&);

// Bandwidth kernels, reused by the contention section.
void launch_copy(const void* src, void* dst, size_t bytes, cudaStream_t s);
void launch_read(const void* src, size_t bytes, int* sink, cudaStream_t s);
void launch_write(void* dst, size_t bytes, uint32_t seed, cudaStream_t s);

}  // namespace cal
