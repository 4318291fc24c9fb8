// Memory sections: device-memory bandwidth (read / write / copy kernels) against transfer size,
// and host<->device copy bandwidth (pinned and pageable). Feeds servesim's HBM efficiency table
// and its PCIe/host-link costs (swap, offload).
#include "common.cuh"

#include <chrono>
#include <cstring>

namespace cal {

// 16-byte accesses, four independent loads in flight per thread, grid-stride: the standard shape
// that gets within a few percent of HBM peak on Hopper.
__global__ void k_read(const int4* __restrict__ p, size_t n, int* __restrict__ sink) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  const size_t st = (size_t)gridDim.x * blockDim.x;
  int acc = 0;
  for (; i + 3 * st < n; i += 4 * st) {
    int4 a = p[i], b = p[i + st], c = p[i + 2 * st], d = p[i + 3 * st];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += st) {
    int4 a = p[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  // Data-dependent store the compiler cannot prove dead, practically never taken.
  if (acc == 0x7F3A5C1D) sink[threadIdx.x] = acc;
}

__global__ void k_write(int4* __restrict__ p, size_t n, uint32_t seed) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  const size_t st = (size_t)gridDim.x * blockDim.x;
  for (; i < n; i += st) {
    int v = (int)(((uint32_t)i * 0x9E3779B9u) ^ seed) | 1;  // non-zero, varies per element
    p[i] = make_int4(v, v ^ 0x1111, v ^ 0x2222, v ^ 0x3333);
  }
}

__global__ void k_copy(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  const size_t st = (size_t)gridDim.x * blockDim.x;
  for (; i + 3 * st < n; i += 4 * st) {
    int4 a = src[i], b = src[i + st], c = src[i + 2 * st], d = src[i + 3 * st];
    dst[i] = a;
    dst[i + st] = b;
    dst[i + 2 * st] = c;
    dst[i + 3 * st] = d;
  }
  for (; i < n; i += st) dst[i] = src[i];
}

static unsigned bw_blocks(size_t n16) {
  size_t b = (n16 + 255) / 256;
  return (unsigned)std::max<size_t>(1, std::min<size_t>(b, (size_t)device().sm_count * 16));
}

void launch_copy(const void* src, void* dst, size_t bytes, cudaStream_t s) {
  size_t n = bytes / 16;
  k_copy<<<bw_blocks(n), 256, 0, s>>>((const int4*)src, (int4*)dst, n);
}
void launch_read(const void* src, size_t bytes, int* sink, cudaStream_t s) {
  size_t n = bytes / 16;
  k_read<<<bw_blocks(n), 256, 0, s>>>((const int4*)src, n, sink);
}
void launch_write(void* dst, size_t bytes, uint32_t seed, cudaStream_t s) {
  size_t n = bytes / 16;
  k_write<<<bw_blocks(n), 256, 0, s>>>((int4*)dst, n, seed);
}

void run_bandwidth(const Args& a) {
  const size_t max_size = a.quick ? 256 * MiB : 4 * GiB;
  // Two arenas of max_size: copy reads one and writes the other. Smaller transfers rotate
  // through the arena so that consecutive ops miss in L2.
  const size_t arena = std::max(max_size, 2 * kRotateBytes);
  char *A, *B;
  int* sink;
  CK(cudaMalloc(&A, arena));
  CK(cudaMalloc(&B, arena));
  CK(cudaMalloc(&sink, 1024 * sizeof(int)));
  fill_random_bits(A, arena, 1);
  fill_random_bits(B, arena, 2);
  CK(cudaDeviceSynchronize());
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  std::vector<std::string> rec;
  std::printf("%-6s %12s %12s %10s\n", "op", "bytes", "time_us", "GB/s");
  for (size_t sz = 1 * MiB; sz <= max_size; sz *= 2) {
    // 2x kRotateBytes of distinct data per sweep for the small sizes.
    int nrot = std::min<int>(rotation_count(sz, 1024) * 2, (int)(arena / sz));
    for (const char* opname : {"read", "write", "copy"}) {
      std::string op = opname;
      std::function<void(cudaStream_t, int)> f;
      if (op == "read") f = [&](cudaStream_t st, int r) { launch_read(A + (size_t)r * sz, sz, sink, st); };
      else if (op == "write") f = [&](cudaStream_t st, int r) { launch_write(A + (size_t)r * sz, sz, 12345u + r, st); };
      else f = [&](cudaStream_t st, int r) { launch_copy(A + (size_t)r * sz, B + (size_t)r * sz, sz, st); };
      TimeResult t = time_op(s, f, nrot);
      if (op == "copy") {
        // Also time the runtime's device-to-device memcpy; record the faster (both are what a
        // serving engine might use for KV block copies), and log both.
        TimeResult tm = time_op(
            s, [&](cudaStream_t st, int r) {
              CK(cudaMemcpyAsync(B + (size_t)r * sz, A + (size_t)r * sz, sz, cudaMemcpyDeviceToDevice, st));
            }, nrot);
        std::printf("copy   %12zu kernel %.2f us, cudaMemcpyAsync %.2f us\n", 2 * sz, t.per_op_s * 1e6, tm.per_op_s * 1e6);
        if (tm.per_op_s < t.per_op_s) t = tm;
      }
      size_t moved = op == "copy" ? 2 * sz : sz;
      double bps = moved / t.per_op_s;
      rec.push_back(JObj().add("op", op).add("bytes", moved).add("time_s", t.per_op_s).add("bytes_per_s", bps).str());
      std::printf("%-6s %12zu %12.2f %10.1f\n", opname, moved, t.per_op_s * 1e6, bps / 1e9);
    }
  }
  CK(cudaStreamDestroy(s));
  CK(cudaFree(A));
  CK(cudaFree(B));
  CK(cudaFree(sink));
  write_section(a.out, "bandwidth", json_array(rec));
}

void run_host_copy(const Args& a) {
  const size_t max_size = a.quick ? 64 * MiB : 1 * GiB;
  void* dev;
  void* pinned;
  CK(cudaMalloc(&dev, max_size));
  CK(cudaMallocHost(&pinned, max_size));
  // Pageable buffer: touched and filled first so first-touch page faults stay out of the timing.
  std::vector<uint32_t> pageable(max_size / 4);
  for (size_t i = 0; i < pageable.size(); ++i) pageable[i] = (uint32_t)(i * 2654435761u) | 1u;
  std::memcpy(pinned, pageable.data(), max_size);
  fill_random_bits(dev, max_size, 7);
  CK(cudaDeviceSynchronize());
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  std::vector<std::string> rec;
  std::printf("%-4s %-8s %12s %12s %10s\n", "dir", "pinned", "bytes", "time_us", "GB/s");
  for (bool is_pinned : {true, false}) {
    void* host = is_pinned ? pinned : (void*)pageable.data();
    for (const char* dir : {"h2d", "d2h"}) {
      bool h2d = std::string(dir) == "h2d";
      for (size_t sz = 1 * MiB; sz <= max_size; sz *= 2) {
        // Host clock around copy + stream sync: for pageable memory the CPU staging is part of
        // the cost a serving engine pays, and events would not see all of it.
        auto once = [&] {
          if (h2d) CK(cudaMemcpyAsync(dev, host, sz, cudaMemcpyHostToDevice, s));
          else CK(cudaMemcpyAsync(host, dev, sz, cudaMemcpyDeviceToHost, s));
          CK(cudaStreamSynchronize(s));
        };
        once();
        once();
        int reps = sz <= 16 * MiB ? 15 : (sz <= 256 * MiB ? 7 : 5);
        std::vector<double> t;
        for (int i = 0; i < reps; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          once();
          t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        double med = median(t);
        rec.push_back(JObj().add("direction", dir).add("pinned", is_pinned).add("bytes", sz).add("time_s", med).str());
        std::printf("%-4s %-8s %12zu %12.1f %10.2f\n", dir, is_pinned ? "pinned" : "pageable", sz, med * 1e6,
                    sz / med / 1e9);
      }
    }
  }
  CK(cudaStreamDestroy(s));
  CK(cudaFree(dev));
  CK(cudaFreeHost(pinned));
  write_section(a.out, "host_copy", json_array(rec));
}

}  // namespace cal
