// Shared by `dtlab bench-kernels` on the CPU (kernels_bench_command.cpp) and on a GPU
// (kernels_bench_cuda.cpp): the sizes asked for, one result row, and the table/JSON output.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace dtl::cli {

struct KernelBenchSizes {
  int batch = 256, width = 1024;  // the linear layer: [batch × width] · [width × width]ᵀ
  std::size_t elements = 0;       // the memory-bound kernels
  int repeats = 5;
  std::string json_path;
};

struct KernelBenchRow {
  std::string kernel, unit;
  double rate = 0, ceiling = 0, vs_reference = 0;  // vs_reference 0: not measured
};

// Best of `repeats` timed runs of fn after one untimed run (which also faults the pages in),
// in seconds: what bench-kernels and bench-step's per-op ceilings time with.
double best_seconds(int repeats, const std::function<void()>& fn);

// The memory ceiling: the fastest of memcpy (streams large copies past the cache), a plain
// copy loop, and an in-place update x[i] += 1 (no extra read-for-ownership of a
// destination, like scale and the in-place reductions). Bytes = what the code reads +
// writes. Split over the CPU threads as the kernels are (kernels/cpu/cpu_threads.h).
struct MemoryCeiling {
  double memcpy_GBps = 0, loop_GBps = 0, update_GBps = 0;
  double best() const { return std::max({memcpy_GBps, loop_GBps, update_GBps}); }
};
MemoryCeiling memory_ceiling(int repeats, const std::vector<float>& src, std::vector<float>& dst);

// Prints the table (headline lines first) and writes the JSON file when asked.
void print_kernel_bench(const KernelBenchSizes& s, const std::vector<std::string>& headlines,
                        const std::vector<KernelBenchRow>& rows, double gemm_ceiling, double memory_ceiling,
                        const std::string& device);

// The GPU run: CUDA kernels and cuBLAS timed with CUDA events, beside cublasSgemm and a
// device-to-device cudaMemcpy measured in the same run. UsageError without a GPU.
int run_cuda_kernel_bench(const KernelBenchSizes& s);

}  // namespace dtl::cli
