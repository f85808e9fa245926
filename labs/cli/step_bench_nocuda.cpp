// `dtlab bench-step --device cuda` in a build without CUDA.
#include "kernels/cuda/device.h"
#include "labs/cli/step_bench.h"

namespace dtl::cli {

double cublas_gemm_tflops(int, int) {
  cuda::require_devices(cuda::probe_devices());  // throws: "built without CUDA", with what to do
  return 0;
}

}  // namespace dtl::cli
