// DTL_MPI_CHECK(call): every MPI call goes through it; a failure throws dtl::Error with
// MPI's own message and the file:line of the call.
#pragma once

#include <mpi.h>

#include <string>

#include "core/error.h"

namespace dtl::detail {
[[noreturn]] inline void mpi_fail(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw Error(std::string("MPI error in ") + call + ": " + std::string(text, std::size_t(len)) + " [" + file + ":" +
              std::to_string(line) + "]");
}
}  // namespace dtl::detail

#define DTL_MPI_CHECK(call)                                                                          \
  do {                                                                                               \
    const int dtl_mpi_rc_ = (call);                                                                  \
    if (dtl_mpi_rc_ != MPI_SUCCESS) ::dtl::detail::mpi_fail(dtl_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
