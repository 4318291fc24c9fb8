// Processor-sharing simulation of kernels from several instances; see contention.hpp.
#include "sim/hw/contention.hpp"

#include <algorithm>
#include <limits>

namespace servesim {

namespace {
double max_frac(const EfficiencyTable& t) {
  double m = 0.0;
  for (const auto& p : t.points()) m = std::max(m, p.second);
  return m > 0.0 ? m : 1.0;
}
}  // namespace

std::vector<KernelWork> kernel_stream(const std::vector<Op>& ops, const HwProfile& hw, Dtype base,
                                      const LaunchConfig& launch) {
  // Expanded in execution order: ops before the layers, the layer body once per layer, the rest.
  std::vector<std::size_t> order;
  std::size_t i = 0;
  for (; i < ops.size() && ops[i].per_layer == 0; ++i) order.push_back(i);
  const std::size_t body = i;
  while (i < ops.size() && ops[i].per_layer > 0) ++i;
  const std::size_t body_end = i;
  if (body_end > body) {
    const std::int64_t layers = ops[body].count / ops[body].per_layer;
    for (std::int64_t l = 0; l < layers; ++l) {
      for (std::size_t j = body; j < body_end; ++j) order.push_back(j);
    }
  }
  for (; i < ops.size(); ++i) order.push_back(i);

  const double bw_cap = hw.hbm_bandwidth_bytes_per_s * max_frac(hw.memory_bw_frac_by_bytes);
  const double c = launch.per_kernel_s(hw);
  double issue = launch.cuda_graphs ? hw.graph_launch_s : 0.0;
  std::vector<KernelWork> out;
  for (std::size_t idx : order) {
    const Op& op = ops[idx];
    const KernelTime k = estimate(op, hw, base);
    const std::int64_t reps = op.per_layer > 0 ? op.per_layer : op.count;
    const double peak = op.kind == OpKind::gemm || op.kind == OpKind::attention_prefill || op.kind == OpKind::attention_decode
                            ? std::max(hw.peak_flops(Dtype::bf16), hw.peak_flops(Dtype::fp16)) * max_frac(hw.gemm_compute_frac_by_m)
                            : hw.vector_fp32_flops_per_s;
    for (std::int64_t r = 0; r < reps; ++r) {
      const int parts = k.launches;
      for (int part = 0; part < parts; ++part) {
        KernelWork w;
        // Each launch includes the GPU's gap before the next dependent kernel (as combine_step).
        w.alone_s = (parts == 2 ? (part == 0 ? k.pass_s : k.time_s - k.pass_s) : k.time_s) + hw.dependent_kernel_gap_s;
        const double share = parts == 2 ? w.alone_s / k.time_s : 1.0;
        w.bw = std::min(1.0, k.bytes * share / (w.alone_s * bw_cap));
        w.sm = std::min(1.0, op.flops * share / (w.alone_s * peak));
        issue += c;
        w.issue_s = issue;
        out.push_back(w);
      }
    }
  }
  return out;
}

std::vector<InstanceResult> simulate_shared_gpu(const std::vector<std::vector<KernelWork>>& streams,
                                                const std::vector<LaunchConfig>& launches, std::int64_t steps) {
  const std::size_t n = streams.size();
  struct State {
    double step_start = 0.0;  // when this step's launches begin (after host_pre)
    std::size_t next = 0;     // kernel index
    bool running = false;
    double remaining = 0.0;   // alone-seconds left of the running kernel
    double ready = 0.0;       // when the next kernel may start (issued and predecessor done)
    std::int64_t done_steps = 0;
    double first_start = 0.0, last_end = 0.0;
  };
  std::vector<State> st(n);
  for (std::size_t i = 0; i < n; ++i) {
    st[i].step_start = launches[i].host_overhead_per_step_s;
    st[i].ready = st[i].step_start + (streams[i].empty() ? 0.0 : streams[i][0].issue_s);
  }
  double now = 0.0;
  const double inf = std::numeric_limits<double>::infinity();
  std::size_t active = n;
  while (active > 0) {
    double sum_bw = 0.0, sum_sm = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      if (st[i].running) {
        sum_bw += streams[i][st[i].next].bw;
        sum_sm += streams[i][st[i].next].sm;
      }
    }
    const double speed = std::min({1.0, sum_bw > 0 ? 1.0 / sum_bw : inf, sum_sm > 0 ? 1.0 / sum_sm : inf});
    double t_next = inf;
    for (std::size_t i = 0; i < n; ++i) {
      if (st[i].done_steps >= steps) continue;
      t_next = std::min(t_next, st[i].running ? now + st[i].remaining / speed : std::max(now, st[i].ready));
    }
    const double dt = t_next - now;
    for (std::size_t i = 0; i < n; ++i) {
      if (st[i].running) st[i].remaining -= dt * speed;
    }
    now = t_next;
    for (std::size_t i = 0; i < n; ++i) {
      State& s = st[i];
      if (s.done_steps >= steps) continue;
      const auto& ks = streams[i];
      if (s.running && s.remaining <= 1e-15) {
        s.running = false;
        s.next += 1;
        if (s.next == ks.size()) {  // step done: host_post, then the next step's host_pre
          s.done_steps += 1;
          s.last_end = now;
          const LaunchConfig& l = launches[i];
          s.step_start = now + l.host_overhead_per_step_s;  // per-seq host work is folded in by the caller
          s.next = 0;
          if (s.done_steps >= steps) {
            active -= 1;
            continue;
          }
        }
        s.ready = std::max(now, s.step_start + ks[s.next].issue_s);
      }
      if (!s.running && now >= s.ready && s.done_steps < steps) {
        s.running = true;
        s.remaining = ks[s.next].alone_s;
      }
    }
  }
  std::vector<InstanceResult> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = {st[i].last_end / static_cast<double>(steps), steps};
  return out;
}

}  // namespace servesim
