// The gpu-labelled tests skip themselves, with the reason, on a machine without a usable
// GPU: plain `ctest` there lists them as skipped (gtest_discover_tests matches
// "[  SKIPPED ]"), not failed; tests/gpu/run.sh runs them where there is one.
#pragma once

#include <gtest/gtest.h>

#include "kernels/cuda/device.h"

// In a fixture's SetUp() or a test body: GTEST_SKIP (which returns) when there is no GPU.
#define DTL_SKIP_WITHOUT_GPU()                                                               \
  do {                                                                                       \
    const ::dtl::cuda::Devices dtl_devices_ = ::dtl::cuda::probe_devices();                  \
    if (dtl_devices_.count == 0) GTEST_SKIP() << "no CUDA device: " << dtl_devices_.problem; \
  } while (0)
