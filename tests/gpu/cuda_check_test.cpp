// Runs on any machine where CUDA is built, GPU or not (label unit): the check macro turns
// a failing call into an error naming the call, file and line, the device probe answers
// without crashing (here, without a GPU, with the reason), and the gpu tests skip there.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

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
  if (d.count == 0)
    EXPECT_THROW(cuda::require_devices(d), UsageError);
  else
    EXPECT_EQ(cuda::device_for_rank(d.count + 1, d), 1);  // rank r uses GPU r mod count
}

// Issue 14: on a machine without a GPU, plain `ctest` reported every gpu test as failed.
// They must skip themselves with the reason (CTest then lists them as skipped).
TEST(GpuTests, SkipWithTheReasonWithoutAGpu) {
  if (cuda::probe_devices().count > 0) GTEST_SKIP() << "this machine has a GPU: the gpu tests run for real there";
  for (const char* exe : {CUDA_KERNELS_TEST_EXE, CUDA_DEVICE_OPS_TEST_EXE, NCCL_COMM_TEST_EXE}) {
    if (!*exe) continue;  // not built (no NCCL)
    FILE* p = popen((std::string(exe) + " 2>&1").c_str(), "r");
    ASSERT_NE(p, nullptr) << exe;
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    const int status = pclose(p);
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0) << exe << " failed instead of skipping:\n" << out;
    EXPECT_NE(out.find("[  SKIPPED ]"), std::string::npos) << exe << "\n" << out;
    EXPECT_NE(out.find("no CUDA device: cudaGetDeviceCount returned"), std::string::npos)
        << exe << ": the skip should say why\n"
        << out;
    EXPECT_EQ(out.find("[  FAILED  ]"), std::string::npos) << exe << "\n" << out;
  }
}
