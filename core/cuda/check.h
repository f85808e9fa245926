// Every CUDA runtime call goes through DTL_CUDA_CHECK: a failure throws dtl::Error naming
// the call, the file and line, and CUDA's own error text, e.g.
//   core/comm/nccl/nccl_run.cpp:41: cudaSetDevice(d) failed: cudaErrorInvalidDevice (invalid device ordinal)
// Kernel launches are followed by DTL_CUDA_CHECK(cudaGetLastError()). cuBLAS has its own
// macro (kernels/cuda/cublas_check.h) and NCCL its own (core/cuda/nccl_check.h); core/
// includes only these headers of the CUDA toolkit, nothing from kernels/ or labs/.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"

namespace dtl::cuda {

[[noreturn]] inline void fail(const char* call, const char* file, int line, const std::string& why) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + why);
}

inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) fail(call, file, line, std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")");
}

}  // namespace dtl::cuda

#define DTL_CUDA_CHECK(call) ::dtl::cuda::check((call), #call, __FILE__, __LINE__)
