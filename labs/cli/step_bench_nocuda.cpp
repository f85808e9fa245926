// `dtlab bench-step --device cuda` in a build without CUDA.
#include "kernels/cuda/device.h"
#include "labs/cli/step_bench.h"

namespace dtl::cli {

int run_step_bench_cuda(const StepBenchArgs&) {
  cuda::require_devices(cuda::probe_devices());  // throws: "built without CUDA", with what to do
  return 2;
}

}  // namespace dtl::cli
