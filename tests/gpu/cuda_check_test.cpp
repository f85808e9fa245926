// Runs on any machine where CUDA is built, GPU or not (label unit): the check macro turns
// a failing call into an error naming the call, file and line, and the device probe
// answers without crashing (here, without a GPU, with the reason).
#include <gtest/gtest.h>

#include <cstdio>

#include "core/cuda/check.h"
#include "kernels/cuda/device.h"

using namespace dtl;

TEST(CudaErrors, ACheckedCallThatFailsNamesTheCallFileAndLine) {
  try {
    DTL_CUDA_CHECK(cudaSetDevice(1 << 20));  // no such device, GPU or not
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice"), std::string::npos) << what;
    EXPECT_NE(what.find("cuda_check_test.cpp:"), std::string::npos) << what;
  }
}

TEST(CudaErrors, TheProbeAnswersWithACountOrAReason) {
  const cuda::Devices d = cuda::probe_devices();
  std::printf("GPUs: %d%s%s\n", d.count, d.problem.empty() ? "" : ", because ", d.problem.c_str());
  EXPECT_EQ(d.count > 0, d.problem.empty());
  if (d.count == 0) EXPECT_THROW(cuda::require_devices(d), UsageError);
  else EXPECT_EQ(cuda::device_for_rank(d.count + 1, d), 1);  // rank r uses GPU r mod count
}
