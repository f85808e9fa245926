// DTL_NCCL_CHECK(call): every NCCL call goes through it; a failure throws dtl::Error naming
// the call, file:line, NCCL's error string and its last-error text (what NCCL_DEBUG=WARN
// would print). CUDA runtime calls use DTL_CUDA_CHECK from core/cuda/check.h.
#pragma once

#include <nccl.h>

#include <string>

#include "core/error.h"

namespace dtl::detail {
[[noreturn]] inline void nccl_fail(ncclResult_t r, const char* call, const char* file, int line) {
  std::string why = ncclGetErrorString(r);
  const char* last = ncclGetLastError(nullptr);
  if (last && *last) why += std::string(" (") + last + ")";
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + why);
}
}  // namespace dtl::detail

#define DTL_NCCL_CHECK(call)                                                                            \
  do {                                                                                                  \
    const ncclResult_t dtl_nccl_rc_ = (call);                                                           \
    if (dtl_nccl_rc_ != ncclSuccess) ::dtl::detail::nccl_fail(dtl_nccl_rc_, #call, __FILE__, __LINE__); \
  } while (0)
