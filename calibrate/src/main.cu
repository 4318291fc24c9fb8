// servesim_calibrate: entry point. Runs ONE section per process and writes its JSON fragment;
// run_all.sh calls it once per section and merge_raw.py assembles raw.json, so a crash in one
// section only loses that section.
#include "common.cuh"
#include "gemm_lt.cuh"

#include <cstring>
#include <map>

namespace cal {

void run_gpu_info(const Args& a) {
  const Device& d = device();
  int drv = 0, rt = 0, clk_khz = 0, mem_khz = 0;
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rt));
  CK(cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, d.id));
  CK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, d.id));
  auto ver = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  JObj g;
  g.add("name", std::string(d.prop.name))
      .add("compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor))
      .add("sm_count", d.sm_count)
      .add("l2_bytes", (long long)d.l2_bytes)
      .add("memory_bytes", (long long)d.prop.totalGlobalMem)
      // CUDA driver API version; run_all.sh replaces it with nvidia-smi's driver string when it can.
      .add("driver", "cuda-driver-api-" + ver(drv))
      .add("cuda_runtime", ver(rt))
      .add("sm_clock_mhz_max", clk_khz / 1000)
      .add("mem_clock_mhz", mem_khz / 1000);
  int cublas_ver = 0;
  cublasHandle_t h;
  CKB(cublasCreate(&h));
  CKB(cublasGetVersion(h, &cublas_ver));
  CKB(cublasDestroy(h));
  std::printf("GPU %s cc %d.%d, %d SMs, L2 %zu B, mem %zu B, driver API %d, runtime %d, cuBLAS %d, "
              "cuBLASLt %zu\n",
              d.prop.name, d.cc_major, d.cc_minor, d.sm_count, d.l2_bytes, (size_t)d.prop.totalGlobalMem,
              drv, rt, cublas_ver, cublasLtGetVersion());
  write_section(a.out, "gpu", g.str());
}

}  // namespace cal

int main(int argc, char** argv) {
  using namespace cal;
  std::map<std::string, void (*)(const Args&)> sections = {
      {"gpu", run_gpu_info},           {"bandwidth", run_bandwidth},
      {"host_copy", run_host_copy},    {"elementwise", run_elementwise},
      {"gemm", run_gemm},              {"contention", run_contention},
      {"quant_gemm", run_quant_gemm},  {"attention_decode", run_attention_decode},
      {"attention_decode_kv", run_attention_decode_kv},
      {"attention_decode_mmha", run_attention_decode_mmha},
      {"launch", run_launch},
  };
  std::string section;
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--section" && i + 1 < argc) section = argv[++i];
    else if (s == "--out" && i + 1 < argc) a.out = argv[++i];
    else if (s == "--quick") a.quick = true;
    else {
      std::fprintf(stderr, "unknown argument: %s\n", s.c_str());
      return 2;
    }
  }
  if (section.empty() || a.out.empty() || !sections.count(section)) {
    std::fprintf(stderr, "usage: %s --section NAME --out FILE.json [--quick]\nsections:", argv[0]);
    for (auto& kv : sections) std::fprintf(stderr, " %s", kv.first.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  CK(cudaSetDevice(0));
  std::printf("== section %s%s\n", section.c_str(), a.quick ? " (quick)" : "");
  std::fflush(stdout);
  sections[section](a);
  CK(cudaDeviceSynchronize());
  return 0;
}
