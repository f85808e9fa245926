#include "kernels/cuda/device.h"

#include <cuda_runtime_api.h>

#include "core/error.h"

namespace dtl::cuda {

bool built_with_cuda() { return true; }

Devices probe_devices() {
  Devices d;
  const cudaError_t e = cudaGetDeviceCount(&d.count);
  if (e != cudaSuccess) {  // no driver, no device, or a broken install: say which
    d.count = 0;
    d.problem = std::string("cudaGetDeviceCount returned ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    (void)cudaGetLastError();  // clear the sticky error so later calls do not report it
  } else if (d.count == 0) {
    d.problem = "cudaGetDeviceCount found no GPU";
  }
  return d;
}

int device_for_rank(int rank, const Devices& devices) {
  if (devices.count < 1) require_devices(devices);
  return rank % devices.count;
}

void require_devices(const Devices& devices) {
  if (devices.count > 0) return;
  throw UsageError("--device cuda needs a GPU, and this machine has none usable (" + devices.problem +
                   "); run on a GPU machine, or use --device cpu");
}

}  // namespace dtl::cuda
