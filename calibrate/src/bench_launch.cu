// Launch costs: host cost of an eager kernel launch, the GPU-side gap between back-to-back
// kernels, per-node cost inside a CUDA graph, host cost of a graph launch, and the launch+sync
// round trip. servesim's LaunchQueue uses these to decide when a step is launch-bound.
#include "common.cuh"

#include <chrono>

namespace cal {

__global__ void k_empty() {}

// Busy-waits for `ns` of GPU time, so the host can queue many launches behind it and the GPU
// then runs them with no host starvation: the measured spacing is the GPU-side cost alone.
__global__ void k_spin(long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while ((long long)(t - t0) < ns);
}

using clk = std::chrono::steady_clock;
static double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

void run_launch(const Args& a) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 200; ++i) k_empty<<<1, 32, 0, s>>>();
  k_spin<<<1, 1, 0, s>>>(1000);
  CK_LAUNCH();
  CK(cudaStreamSynchronize(s));
  const int reps = a.quick ? 3 : 7;

  // 1. Host cost per eager launch: N launches back to back, host clock, no sync inside.
  const int N = 1000;
  std::vector<double> host;
  for (int r = 0; r < reps; ++r) {
    auto t0 = clk::now();
    for (int i = 0; i < N; ++i) k_empty<<<1, 32, 0, s>>>();
    auto t1 = clk::now();
    CK(cudaStreamSynchronize(s));
    host.push_back(secs(t0, t1) / N);
  }
  const double eager_launch = median(host);

  // 2. GPU-side gap: queue N empty kernels behind a spin kernel long enough to cover their
  //    host launch time, then time them on the GPU with events.
  const long long spin_ns = std::max<long long>(5'000'000, (long long)(4 * N * eager_launch * 1e9));
  std::vector<double> gap;
  for (int r = 0; r < reps; ++r) {
    k_spin<<<1, 1, 0, s>>>(spin_ns);
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < N; ++i) k_empty<<<1, 32, 0, s>>>();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    gap.push_back(ms * 1e-3 / N);
  }
  CK_LAUNCH();
  const double eager_gap = median(gap);

  // 3. Graphs of n empty kernels in a chain: GPU time of one replay against n; the slope is the
  //    per-node cost. Host cost of cudaGraphLaunch measured separately on the 1-node graph.
  std::vector<int> sizes = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
  std::vector<double> xs, ys;
  double graph_launch_host = 0;
  for (int n : sizes) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; ++i) k_empty<<<1, 32, 0, s>>>();
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    std::vector<double> t;
    for (int r = 0; r < 21; ++r) {
      // Spin first so the replay is queued ahead and its GPU time excludes the host launch.
      k_spin<<<1, 1, 0, s>>>(200'000);
      CK(cudaEventRecord(e0, s));
      CK(cudaGraphLaunch(ge, s));
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms * 1e-3);
    }
    const double med = median(t);
    xs.push_back(n);
    ys.push_back(med);
    std::printf("graph of %4d empty kernels: %.2f us per replay (%.3f us per node)\n", n, med * 1e6, med * 1e6 / n);
    if (n == 1) {
      std::vector<double> h;
      for (int r = 0; r < reps; ++r) {
        const int L = 1000;
        auto t0 = clk::now();
        for (int i = 0; i < L; ++i) CK(cudaGraphLaunch(ge, s));
        auto t1 = clk::now();
        CK(cudaStreamSynchronize(s));
        h.push_back(secs(t0, t1) / L);
      }
      graph_launch_host = median(h);
    }
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
  }
  // Least-squares line through (n, time).
  double mx = 0, my = 0;
  for (size_t i = 0; i < xs.size(); ++i) { mx += xs[i]; my += ys[i]; }
  mx /= xs.size();
  my /= ys.size();
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < xs.size(); ++i) { sxy += (xs[i] - mx) * (ys[i] - my); sxx += (xs[i] - mx) * (xs[i] - mx); }
  const double node = sxy / sxx, intercept = my - node * mx;

  // 4. Launch + synchronize round trip (what a step pays when the host waits for the GPU).
  std::vector<double> rt;
  for (int i = 0; i < (a.quick ? 100 : 1000); ++i) {
    auto t0 = clk::now();
    k_empty<<<1, 32, 0, s>>>();
    CK(cudaStreamSynchronize(s));
    rt.push_back(secs(t0, clk::now()));
  }
  const double launch_sync = median(rt);

  std::printf("eager launch (host) %.2f us, eager GPU gap %.2f us, graph node %.3f us (intercept %.2f us), "
              "graph launch (host) %.2f us, launch+sync %.2f us\n",
              eager_launch * 1e6, eager_gap * 1e6, node * 1e6, intercept * 1e6, graph_launch_host * 1e6, launch_sync * 1e6);
  JObj j;
  j.add("eager_launch_s", eager_launch).add("eager_gpu_gap_s", eager_gap).add("graph_node_s", node)
      .add("graph_launch_s", graph_launch_host).add("launch_sync_s", launch_sync);
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
  write_section(a.out, "launch", j.str());
}

}  // namespace cal
