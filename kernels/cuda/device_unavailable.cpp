// probe_devices() for a dtlab built without the CUDA toolkit.
#include "core/error.h"
#include "kernels/cuda/device.h"

namespace dtl::cuda {

bool built_with_cuda() { return false; }

Devices probe_devices() { return {0, "this dtlab was built without CUDA (no toolkit found at configure time)"}; }

int device_for_rank(int, const Devices& devices) {
  require_devices(devices);
  return 0;
}

void require_devices(const Devices& devices) {
  if (devices.count > 0) return;
  throw UsageError("--device cuda: " + devices.problem + "; install the CUDA toolkit and rebuild, or use --device cpu");
}

void use_cuda_memory() { require_devices(probe_devices()); }  // throws: built without CUDA

}  // namespace dtl::cuda
