// `dtlab bench-kernels --device cuda` in a build without CUDA.
#include "core/error.h"
#include "kernels/cuda/device.h"
#include "labs/cli/kernels_bench.h"

namespace dtl::cli {

int run_cuda_kernel_bench(const KernelBenchSizes&) {
  cuda::require_devices(cuda::probe_devices());  // throws: "built without CUDA", with what to do
  return 2;
}

}  // namespace dtl::cli
