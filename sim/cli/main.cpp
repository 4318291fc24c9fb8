// servesim entry point: hands the arguments to the subcommand dispatcher.
#include <malloc.h>

#include <string>
#include <vector>

#include "sim/cli/commands.hpp"

int main(int argc, char** argv) {
  // Keep freed memory for reuse instead of returning it to the kernel: plan, saturate and sweep
  // run thousands of short simulations, each allocating and freeing the same large buffers (the
  // kernel-time caches, the KV allocator's tables). Above glibc's default 128 KB threshold each
  // was a fresh mmap whose pages faulted in on first touch: 282k page faults and 30% of the CPU
  // time of `plan --hw b200,l40s --quant bf16,fp8` (5k faults with these settings; same output).
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  return servesim::cli::dispatch(std::vector<std::string>(argv + 1, argv + argc));
}
