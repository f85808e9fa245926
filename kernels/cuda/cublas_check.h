// DTL_CUBLAS_CHECK(call): every cuBLAS call goes through it; a failure throws dtl::Error
// naming the call, file:line and cuBLAS's status string (see core/cuda/check.h).
#pragma once

#include <cublas_v2.h>

#include "core/cuda/check.h"

namespace dtl::cuda {

inline void check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(call, file, line, cublasGetStatusString(s));
}

}  // namespace dtl::cuda

#define DTL_CUBLAS_CHECK(call) ::dtl::cuda::check((call), #call, __FILE__, __LINE__)
