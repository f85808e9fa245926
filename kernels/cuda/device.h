// Which GPUs this process can use, asked without crashing: on a machine without a GPU
// (or without a driver) cudaGetDeviceCount returns an error, not 0, and the answer says
// which. Built with or without CUDA (device_unavailable.cpp says "built without CUDA").
#pragma once

#include <string>

namespace dtl::cuda {

struct Devices {
  int count = 0;        // usable GPUs
  std::string problem;  // why count is 0, in words ("" when count > 0)
};

bool built_with_cuda();
Devices probe_devices();
// The GPU rank r uses: r mod count, so several thread ranks may share one GPU.
int device_for_rank(int rank, const Devices& devices);
// Throws UsageError with what to do when `--device cuda` cannot run here.
void require_devices(const Devices& devices);
// Lets this process keep buffers on GPUs: installs the CUDA DeviceOps
// (core/memory/device_ops.h). UsageError, as require_devices, when it cannot.
void use_cuda_memory();

}  // namespace dtl::cuda
