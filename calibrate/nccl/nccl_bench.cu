// nccl_bench: single-process multi-GPU NCCL benchmark for servesim's interconnect tables.
//
// One process drives every GPU (ncclCommInitAll). For each GPU count G in --gpu-counts (default:
// 2, 4, 8, ... up to the visible count, plus the visible count itself) it builds a communicator
// over GPUs 0..G-1 and times, for bf16 messages of 4 KiB .. 1 GiB (powers of 2):
//   all_reduce  (sum, out of place)                busbw = algbw * 2(G-1)/G
//   all_gather  (bytes = the gathered output size)  busbw = algbw * (G-1)/G
// and, once, with the largest communicator:
//   send_recv pattern "pair"  GPU 0 -> GPU 1, one direction         busbw = algbw
//   send_recv pattern "ring"  every GPU i -> i+1 (mod G) at once      busbw = algbw (per link)
// These are nccl-tests' conventions (doc/PERFORMANCE.md there): algbw = bytes / time_s.
//
// Timing: per size, `warmup` untimed operations, then `reps` repetitions of `iters` back-to-back
// operations bracketed by CUDA events on every GPU's stream; a repetition's time is the slowest
// GPU's elapsed time / iters; time_s is the median over repetitions (min and max are kept too).
// With --graph the `iters` operations are captured once into one CUDA graph per GPU (as nccl-tests
// -G does) and each repetition replays the graphs: that is how a graph-captured decode step issues
// its all-reduces, so small-message latency there excludes host launch cost.
//
// NVLink SHARP / multicast (NVLS) must be off: the program refuses to run unless the environment
// has NCCL_NVLS_ENABLE=0, and records the value. (The workplace's multi-GPU machines must not use
// NVLink multicast; servesim's ring model also assumes no in-switch reduction.)
//
// Data are small integers in bf16, so every sum is exact; all_reduce, all_gather and send_recv
// are checked once per communicator at 1 MiB (exit 1 on a mismatch).
//
// Build: nvcc -O2 -std=c++17 -arch=sm_90 calibrate/nccl/nccl_bench.cu -lnccl -o build-cal/nccl_bench
// Run:   NCCL_NVLS_ENABLE=0 build-cal/nccl_bench --out OUT/nccl_bench.json [--driver 580.x] [--graph]
//        [--gpus N] [--gpu-counts 2,4,8] [--min-bytes 4096] [--max-bytes 1073741824]
//        [--reps 10] [--warmup 5] [--ops all_reduce,all_gather,send_recv] [--quick]
// Output schema: servesim-nccl-raw/1 (see docs/multi_gpu_calibration.md).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#define CUDA_CHECK(x)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "nccl_bench: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,                \
                   cudaGetErrorString(e_));                                                      \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

#define NCCL_CHECK(x)                                                                            \
  do {                                                                                           \
    ncclResult_t r_ = (x);                                                                       \
    if (r_ != ncclSuccess) {                                                                     \
      std::fprintf(stderr, "nccl_bench: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,                \
                   ncclGetErrorString(r_));                                                      \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

namespace {

struct Options {
  int gpus = 0;  // 0 = all visible
  std::vector<int> gpu_counts;
  size_t min_bytes = 4096;
  size_t max_bytes = size_t(1) << 30;
  int reps = 10;
  int warmup = 5;
  bool graph = false;
  bool quick = false;
  bool do_all_reduce = true, do_all_gather = true, do_send_recv = true;
  std::string out;
  std::string driver;
  std::string command;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "nccl_bench: %s\nusage: NCCL_NVLS_ENABLE=0 nccl_bench --out FILE [--driver STR] [--graph] [--gpus N]\n"
               "       [--gpu-counts 2,4,8] [--min-bytes B] [--max-bytes B] [--reps R] [--warmup W]\n"
               "       [--ops all_reduce,all_gather,send_recv] [--quick]\n",
               msg);
  std::exit(2);
}

std::vector<int> parse_int_list(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(pos, comma - pos);
    if (!item.empty()) out.push_back(std::atoi(item.c_str()));
    pos = comma + 1;
  }
  return out;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    if (i) o.command += ' ';
    o.command += argv[i];
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--out") o.out = next();
    else if (a == "--driver") o.driver = next();
    else if (a == "--gpus") o.gpus = std::atoi(next().c_str());
    else if (a == "--gpu-counts") o.gpu_counts = parse_int_list(next());
    else if (a == "--min-bytes") o.min_bytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--max-bytes") o.max_bytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--reps") o.reps = std::atoi(next().c_str());
    else if (a == "--warmup") o.warmup = std::atoi(next().c_str());
    else if (a == "--graph") o.graph = true;
    else if (a == "--quick") o.quick = true;
    else if (a == "--ops") {
      const std::string ops = "," + next() + ",";
      o.do_all_reduce = ops.find(",all_reduce,") != std::string::npos;
      o.do_all_gather = ops.find(",all_gather,") != std::string::npos;
      o.do_send_recv = ops.find(",send_recv,") != std::string::npos;
    } else if (a == "-h" || a == "--help") usage("help");
    else usage(("unknown argument " + a).c_str());
  }
  if (o.out.empty()) usage("--out is required");
  if (o.min_bytes < 4096 || o.max_bytes < o.min_bytes) usage("need 4096 <= --min-bytes <= --max-bytes");
  if (o.reps < 1 || o.warmup < 0) usage("--reps must be >= 1 and --warmup >= 0");
  if (o.quick) {
    o.max_bytes = std::min(o.max_bytes, size_t(64) << 20);
    o.reps = std::min(o.reps, 3);
  }
  return o;
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') { r += '\\'; r += c; }
    else if (c == '\n') r += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) r += ' ';
    else r += c;
  }
  return r;
}

std::string utc_now() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// Element i of rank r's send buffer: (i % 8) + r. Integers <= 8 * (7 + 7) = 112 are exact in bf16.
__global__ void fill_kernel(__nv_bfloat16* p, size_t n, int rank) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = __float2bfloat16(static_cast<float>((i % 8) + rank));
  }
}

void fill(__nv_bfloat16* p, size_t n, int rank, cudaStream_t s) {
  fill_kernel<<<1024, 256, 0, s>>>(p, n, rank);
  CUDA_CHECK(cudaGetLastError());
}

enum class Op { all_reduce, all_gather, send_recv_pair, send_recv_ring };

const char* op_name(Op op) {
  switch (op) {
    case Op::all_reduce: return "all_reduce";
    case Op::all_gather: return "all_gather";
    default: return "send_recv";
  }
}
const char* pattern_name(Op op) {
  switch (op) {
    case Op::send_recv_pair: return "pair";
    case Op::send_recv_ring: return "ring";
    default: return "ring_or_tree";  // NCCL picks the algorithm; NCCL_ALGO is recorded in env
  }
}

double bus_factor(Op op, int g) {
  switch (op) {
    case Op::all_reduce: return 2.0 * (g - 1) / g;
    case Op::all_gather: return double(g - 1) / g;
    default: return 1.0;
  }
}

struct Group {
  int g = 0;                         // GPUs in the communicator (devices 0..g-1)
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<__nv_bfloat16*> send, recv;
  std::vector<cudaEvent_t> start, stop;
  size_t buf_bytes = 0;
};

// Elements per rank for one message of `bytes` (bf16). all_gather: `bytes` is the gathered output,
// so each rank contributes bytes / g; sizes are powers of 2 >= 4096, exact for g a power of 2
// (otherwise rounded down, and the record's bytes say what was moved).
size_t count_for(Op op, size_t bytes, int g) {
  const size_t elems = bytes / sizeof(__nv_bfloat16);
  return op == Op::all_gather ? elems / g : elems;
}
size_t bytes_moved(Op op, size_t bytes, int g) {
  const size_t c = count_for(op, bytes, g);
  return (op == Op::all_gather ? c * g : c) * sizeof(__nv_bfloat16);
}

// Issue one operation on every participating GPU (one NCCL group).
void issue(Group& G, Op op, size_t bytes) {
  const size_t count = count_for(op, bytes, G.g);
  NCCL_CHECK(ncclGroupStart());
  switch (op) {
    case Op::all_reduce:
      for (int i = 0; i < G.g; ++i)
        NCCL_CHECK(ncclAllReduce(G.send[i], G.recv[i], count, ncclBfloat16, ncclSum, G.comms[i], G.streams[i]));
      break;
    case Op::all_gather:
      for (int i = 0; i < G.g; ++i)
        NCCL_CHECK(ncclAllGather(G.send[i], G.recv[i], count, ncclBfloat16, G.comms[i], G.streams[i]));
      break;
    case Op::send_recv_pair:
      NCCL_CHECK(ncclSend(G.send[0], count, ncclBfloat16, 1, G.comms[0], G.streams[0]));
      NCCL_CHECK(ncclRecv(G.recv[1], count, ncclBfloat16, 0, G.comms[1], G.streams[1]));
      break;
    case Op::send_recv_ring:
      for (int i = 0; i < G.g; ++i) {
        NCCL_CHECK(ncclSend(G.send[i], count, ncclBfloat16, (i + 1) % G.g, G.comms[i], G.streams[i]));
        NCCL_CHECK(ncclRecv(G.recv[i], count, ncclBfloat16, (i + G.g - 1) % G.g, G.comms[i], G.streams[i]));
      }
      break;
  }
  NCCL_CHECK(ncclGroupEnd());
}

int participants(Op op, int g) { return op == Op::send_recv_pair ? 2 : g; }

void sync_all(Group& G) {
  for (int i = 0; i < G.g; ++i) {
    CUDA_CHECK(cudaSetDevice(i));
    CUDA_CHECK(cudaStreamSynchronize(G.streams[i]));
  }
}

// Check one operation's result at `bytes` against the exact integer answer.
bool check(Group& G, Op op, size_t bytes) {
  const size_t count = count_for(op, bytes, G.g);
  for (int i = 0; i < G.g; ++i) {
    CUDA_CHECK(cudaSetDevice(i));
    fill(G.send[i], count, i, G.streams[i]);
    CUDA_CHECK(cudaMemsetAsync(G.recv[i], 0xFF, bytes_moved(op, bytes, G.g), G.streams[i]));  // NaN poison
  }
  sync_all(G);
  issue(G, op, bytes);
  sync_all(G);
  const size_t out_elems = op == Op::all_gather ? count * G.g : count;
  std::vector<__nv_bfloat16> host(out_elems);
  const int n = participants(op, G.g);
  for (int i = 0; i < n; ++i) {
    if (op == Op::send_recv_pair && i == 0) continue;  // only GPU 1 receives
    CUDA_CHECK(cudaSetDevice(i));
    CUDA_CHECK(cudaMemcpy(host.data(), G.recv[i], out_elems * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
    for (size_t e = 0; e < out_elems; ++e) {
      double want = 0.0;
      switch (op) {
        case Op::all_reduce: want = G.g * double(e % 8) + G.g * (G.g - 1) / 2.0; break;
        case Op::all_gather: want = double((e % count) % 8) + double(e / count); break;
        case Op::send_recv_pair: want = double(e % 8) + 0; break;
        case Op::send_recv_ring: want = double(e % 8) + (i + G.g - 1) % G.g; break;
      }
      const double got = __bfloat162float(host[e]);
      if (got != want) {
        std::fprintf(stderr, "nccl_bench: CHECK FAILED %s(%s) gpus=%d bytes=%zu rank %d elem %zu: got %g want %g\n",
                     op_name(op), pattern_name(op), G.g, bytes, i, e, got, want);
        return false;
      }
    }
  }
  return true;
}

struct Record {
  Op op;
  int gpus;
  size_t bytes;
  int iters, reps;
  double time_s, time_min_s, time_max_s;
};

// Iterations per repetition: enough that one repetition moves >= ~256 MiB or runs >= 100 ops.
int iters_for(size_t bytes) {
  const size_t target = size_t(256) << 20;
  size_t it = target / bytes;
  return static_cast<int>(std::max<size_t>(5, std::min<size_t>(100, it)));
}

Record time_op(Group& G, Op op, size_t bytes, const Options& o) {
  const int iters = iters_for(bytes);
  for (int w = 0; w < o.warmup; ++w) issue(G, op, bytes);
  sync_all(G);

  std::vector<cudaGraphExec_t> execs;
  if (o.graph) {
    std::vector<cudaGraph_t> graphs(G.g);
    for (int i = 0; i < G.g; ++i) {
      CUDA_CHECK(cudaSetDevice(i));
      CUDA_CHECK(cudaStreamBeginCapture(G.streams[i], cudaStreamCaptureModeThreadLocal));
    }
    for (int it = 0; it < iters; ++it) issue(G, op, bytes);
    execs.resize(G.g);
    for (int i = 0; i < G.g; ++i) {
      CUDA_CHECK(cudaSetDevice(i));
      CUDA_CHECK(cudaStreamEndCapture(G.streams[i], &graphs[i]));
      CUDA_CHECK(cudaGraphInstantiate(&execs[i], graphs[i], 0));
      CUDA_CHECK(cudaGraphDestroy(graphs[i]));
    }
    for (int i = 0; i < G.g; ++i) {  // one untimed replay (graph upload)
      CUDA_CHECK(cudaSetDevice(i));
      CUDA_CHECK(cudaGraphLaunch(execs[i], G.streams[i]));
    }
    sync_all(G);
  }

  std::vector<double> samples;
  for (int r = 0; r < o.reps; ++r) {
    for (int i = 0; i < G.g; ++i) {
      CUDA_CHECK(cudaSetDevice(i));
      CUDA_CHECK(cudaEventRecord(G.start[i], G.streams[i]));
    }
    if (o.graph) {
      for (int i = 0; i < G.g; ++i) {
        CUDA_CHECK(cudaSetDevice(i));
        CUDA_CHECK(cudaGraphLaunch(execs[i], G.streams[i]));
      }
    } else {
      for (int it = 0; it < iters; ++it) issue(G, op, bytes);
    }
    for (int i = 0; i < G.g; ++i) {
      CUDA_CHECK(cudaSetDevice(i));
      CUDA_CHECK(cudaEventRecord(G.stop[i], G.streams[i]));
    }
    double slowest = 0.0;
    for (int i = 0; i < participants(op, G.g); ++i) {
      CUDA_CHECK(cudaSetDevice(i));
      CUDA_CHECK(cudaEventSynchronize(G.stop[i]));
      float ms = 0.0f;
      CUDA_CHECK(cudaEventElapsedTime(&ms, G.start[i], G.stop[i]));
      slowest = std::max(slowest, 1e-3 * ms / iters);
    }
    sync_all(G);
    samples.push_back(slowest);
  }
  for (size_t i = 0; i < execs.size(); ++i) {
    CUDA_CHECK(cudaSetDevice(static_cast<int>(i)));
    CUDA_CHECK(cudaGraphExecDestroy(execs[i]));
  }
  std::sort(samples.begin(), samples.end());
  const size_t m = samples.size();
  const double median = m % 2 ? samples[m / 2] : 0.5 * (samples[m / 2 - 1] + samples[m / 2]);
  return Record{op, participants(op, G.g), bytes_moved(op, bytes, G.g), iters, o.reps, median, samples.front(), samples.back()};
}

Group make_group(int g, size_t max_bytes) {
  Group G;
  G.g = g;
  G.comms.resize(g);
  std::vector<int> devs(g);
  for (int i = 0; i < g; ++i) devs[i] = i;
  NCCL_CHECK(ncclCommInitAll(G.comms.data(), g, devs.data()));
  G.streams.resize(g);
  G.send.resize(g);
  G.recv.resize(g);
  G.start.resize(g);
  G.stop.resize(g);
  G.buf_bytes = max_bytes;
  for (int i = 0; i < g; ++i) {
    CUDA_CHECK(cudaSetDevice(i));
    CUDA_CHECK(cudaStreamCreateWithFlags(&G.streams[i], cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&G.send[i], max_bytes));
    CUDA_CHECK(cudaMalloc(&G.recv[i], max_bytes));
    CUDA_CHECK(cudaEventCreate(&G.start[i]));
    CUDA_CHECK(cudaEventCreate(&G.stop[i]));
    fill(G.send[i], max_bytes / sizeof(__nv_bfloat16), i, G.streams[i]);
    CUDA_CHECK(cudaMemsetAsync(G.recv[i], 0, max_bytes, G.streams[i]));
  }
  sync_all(G);
  return G;
}

void destroy_group(Group& G) {
  for (int i = 0; i < G.g; ++i) {
    CUDA_CHECK(cudaSetDevice(i));
    CUDA_CHECK(cudaStreamSynchronize(G.streams[i]));
    NCCL_CHECK(ncclCommDestroy(G.comms[i]));
    CUDA_CHECK(cudaFree(G.send[i]));
    CUDA_CHECK(cudaFree(G.recv[i]));
    CUDA_CHECK(cudaEventDestroy(G.start[i]));
    CUDA_CHECK(cudaEventDestroy(G.stop[i]));
    CUDA_CHECK(cudaStreamDestroy(G.streams[i]));
  }
}

std::string version_string(int v) {
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older: major*1000 + minor*100 + patch.
  char buf[32];
  if (v >= 10000) std::snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  else std::snprintf(buf, sizeof buf, "%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse_args(argc, argv);

  // NVLink multicast must be off, explicitly.
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  if (nvls == nullptr || std::string(nvls) != "0") {
    std::fprintf(stderr, "nccl_bench: refusing to run: NCCL_NVLS_ENABLE must be set to \"0\" (NVLink multicast off), got %s%s%s\n",
                 nvls ? "\"" : "", nvls ? nvls : "(unset)", nvls ? "\"" : "");
    return 2;
  }

  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;  // no driver or no GPU: reported below
  const int n = o.gpus > 0 ? o.gpus : visible;
  if (visible < 2 || n < 2) {
    std::fprintf(stderr, "nccl_bench: needs at least 2 GPUs, %d visible%s\n", visible,
                 o.gpus > 0 ? (", --gpus " + std::to_string(o.gpus)).c_str() : "");
    return 3;
  }
  if (n > visible) {
    std::fprintf(stderr, "nccl_bench: --gpus %d but only %d visible\n", n, visible);
    return 3;
  }
  std::vector<int> counts = o.gpu_counts;
  if (counts.empty()) {
    for (int g = 2; g <= n; g *= 2) counts.push_back(g);
    if (counts.back() != n) counts.push_back(n);
  }
  for (int g : counts)
    if (g < 2 || g > n) usage(("--gpu-counts entry " + std::to_string(g) + " outside [2, " + std::to_string(n) + "]").c_str());

  // Device description (GPU 0) plus every GPU's name and the peer-access matrix.
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int rt = 0, drv = 0, nccl_v = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  NCCL_CHECK(ncclGetVersion(&nccl_v));
  std::vector<std::string> names(n);
  std::vector<std::vector<int>> peer(n, std::vector<int>(n, 0));
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    names[i] = p.name;
    for (int j = 0; j < n; ++j) {
      if (i == j) { peer[i][j] = 1; continue; }
      CUDA_CHECK(cudaDeviceCanAccessPeer(&peer[i][j], i, j));
    }
  }
  std::printf("nccl_bench: %d x %s, NCCL %s, NCCL_NVLS_ENABLE=%s, mode %s, gpu counts:", n, prop.name,
              version_string(nccl_v).c_str(), nvls, o.graph ? "graph" : "eager");
  for (int g : counts) std::printf(" %d", g);
  std::printf("\n");

  std::vector<size_t> sizes;
  for (size_t b = o.min_bytes; b <= o.max_bytes; b *= 2) sizes.push_back(b);

  std::vector<Record> records;
  bool checks_ok = true;
  const size_t check_bytes = std::min<size_t>(size_t(1) << 20, o.max_bytes);
  auto run_sweep = [&](Group& G, Op op) {
    if (!check(G, op, check_bytes)) { checks_ok = false; return; }
    for (size_t b : sizes) {
      Record r = time_op(G, op, b, o);
      const double algbw = r.bytes / r.time_s;
      std::printf("  %-10s %-12s gpus=%d bytes=%11zu time=%10.3f us algbw=%8.2f GB/s busbw=%8.2f GB/s\n", op_name(op),
                  pattern_name(op), r.gpus, r.bytes, r.time_s * 1e6, algbw / 1e9, algbw * bus_factor(op, r.gpus) / 1e9);
      std::fflush(stdout);
      records.push_back(r);
    }
  };
  for (int g : counts) {
    Group G = make_group(g, o.max_bytes);
    if (o.do_all_reduce) run_sweep(G, Op::all_reduce);
    if (o.do_all_gather) run_sweep(G, Op::all_gather);
    if (o.do_send_recv && g == counts.back()) {
      run_sweep(G, Op::send_recv_pair);
      if (g > 2) run_sweep(G, Op::send_recv_ring);
    }
    destroy_group(G);
  }

  // ---- JSON (schema servesim-nccl-raw/1)
  FILE* f = std::fopen(o.out.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "nccl_bench: cannot write %s\n", o.out.c_str());
    return 1;
  }
  std::fprintf(f, "{\n  \"schema\": \"servesim-nccl-raw/1\",\n");
  std::fprintf(f, "  \"date\": \"%s\",\n", utc_now().c_str());
  std::fprintf(f, "  \"command\": \"%s\",\n", json_escape(o.command).c_str());
  std::fprintf(f, "  \"gpu\": {\"name\": \"%s\", \"compute_capability\": \"%d.%d\", \"sm_count\": %d, \"memory_bytes\": %zu, "
                  "\"driver\": \"%s\", \"cuda_runtime\": \"%d.%d\", \"cuda_driver_api\": \"%d.%d\"},\n",
               json_escape(prop.name).c_str(), prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem,
               json_escape(o.driver).c_str(), rt / 1000, (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10);
  std::fprintf(f, "  \"gpu_names\": [");
  for (int i = 0; i < n; ++i) std::fprintf(f, "%s\"%s\"", i ? ", " : "", json_escape(names[i]).c_str());
  std::fprintf(f, "],\n  \"peer_access\": [");
  for (int i = 0; i < n; ++i) {
    std::fprintf(f, "%s[", i ? ", " : "");
    for (int j = 0; j < n; ++j) std::fprintf(f, "%s%d", j ? ", " : "", peer[i][j]);
    std::fprintf(f, "]");
  }
  std::fprintf(f, "],\n");
  std::fprintf(f, "  \"nccl_version\": \"%s\",\n  \"nccl_header_version\": \"%d.%d.%d\",\n", version_string(nccl_v).c_str(),
               NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  std::fprintf(f, "  \"gpu_count\": %d,\n  \"gpu_counts\": [", n);
  for (size_t i = 0; i < counts.size(); ++i) std::fprintf(f, "%s%d", i ? ", " : "", counts[i]);
  std::fprintf(f, "],\n  \"mode\": \"%s\",\n  \"dtype\": \"bf16\",\n", o.graph ? "graph" : "eager");
  std::fprintf(f, "  \"env\": {");
  const char* env_keys[] = {"NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",
                            "NCCL_IB_DISABLE", "NCCL_P2P_LEVEL", "NCCL_CUMEM_ENABLE", "CUDA_VISIBLE_DEVICES"};
  bool first = true;
  for (const char* k : env_keys) {
    const char* v = std::getenv(k);
    if (!v) continue;
    std::fprintf(f, "%s\"%s\": \"%s\"", first ? "" : ", ", k, json_escape(v).c_str());
    first = false;
  }
  std::fprintf(f, "},\n");
  std::fprintf(f, "  \"timing\": \"per size: warmup %d ops, then %d repetitions of iters back-to-back ops (%s) between CUDA events on "
                  "every participating GPU; a repetition's time is the slowest GPU's elapsed / iters; time_s is the median "
                  "repetition. algbw = bytes / time_s; busbw = algbw * 2(n-1)/n (all_reduce), (n-1)/n (all_gather), 1 (send_recv). "
                  "all_gather bytes = gathered output size. send_recv pair: GPU 0 -> 1; ring: every GPU i -> i+1 at once.\",\n",
               o.warmup, o.reps, o.graph ? "captured once in a CUDA graph per GPU and replayed" : "launched eagerly");
  std::fprintf(f, "  \"checks_ok\": %s,\n", checks_ok ? "true" : "false");
  std::fprintf(f, "  \"records\": [\n");
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    const double algbw = r.bytes / r.time_s;
    std::fprintf(f,
                 "    {\"op\": \"%s\", \"pattern\": \"%s\", \"gpus\": %d, \"comm_gpus\": %d, \"bytes\": %zu, \"dtype\": \"bf16\", "
                 "\"time_s\": %.6e, \"time_min_s\": %.6e, \"time_max_s\": %.6e, \"algbw_bytes_per_s\": %.6e, "
                 "\"busbw_bytes_per_s\": %.6e, \"iters\": %d, \"reps\": %d}%s\n",
                 op_name(r.op), pattern_name(r.op), r.gpus, r.op == Op::send_recv_pair ? counts.back() : r.gpus, r.bytes,
                 r.time_s, r.time_min_s, r.time_max_s, algbw, algbw * bus_factor(r.op, r.gpus), r.iters, r.reps,
                 i + 1 < records.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
  std::printf("nccl_bench: wrote %zu records to %s%s\n", records.size(), o.out.c_str(), checks_ok ? "" : " (CHECKS FAILED)");
  return checks_ok ? 0 : 1;
}
