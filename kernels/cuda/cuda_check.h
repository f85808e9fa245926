// Every CUDA, cuBLAS and NCCL call goes through one of these macros: a failure throws
// dtl::Error naming the call, the file and line, and the library's own error text, e.g.
//   kernels/cuda/linear.cpp:41: cublasSgemm(...) failed: CUBLAS_STATUS_INVALID_VALUE
// Kernel launches are followed by DTL_CUDA_CHECK(cudaGetLastError()).
#pragma once

#include <cublas_v2.h>
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

inline void check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(call, file, line, cublasGetStatusString(s));
}

}  // namespace dtl::cuda

#define DTL_CUDA_CHECK(call) ::dtl::cuda::check((call), #call, __FILE__, __LINE__)
#define DTL_CUBLAS_CHECK(call) ::dtl::cuda::check((call), #call, __FILE__, __LINE__)
