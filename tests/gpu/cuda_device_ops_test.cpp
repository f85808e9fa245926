// Label gpu: thread ranks sharing the GPU(s) of this machine, buffers in device memory
// (DeviceOps' CUDA implementation). Every Comm operation must give the same bits as on
// host buffers, the collectives lab must pass all its checks for every algorithm, and
// reduce_many / scale must match their CPU twins, also past one launch's 32 inputs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/memory/device_ops.h"
#include "core/trace/trace.h"
#include "kernels/cuda/device.h"
#include "labs/collectives/crafted.h"
#include "tests/core/device_ops_check.h"
#include "tests/gpu/skip_without_gpu.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

namespace {

class CudaDeviceOps : public ::testing::Test {
 protected:
  void SetUp() override {
    DTL_SKIP_WITHOUT_GPU();
    cuda::use_cuda_memory();
  }
};

// A device buffer with a copy of host bytes.
struct OnGpu {
  DeviceOps& ops = device_ops(Device::cuda(0));
  void* p;
  std::size_t bytes;
  explicit OnGpu(const std::vector<char>& host) : p(ops.allocate(host.size(), 0)), bytes(host.size()) {
    copy_bytes(p, host.data(), bytes);
  }
  ~OnGpu() { ops.release(p); }
  std::vector<char> read() const {
    std::vector<char> h(bytes);
    copy_bytes(h.data(), p, bytes);
    return h;
  }
};

}  // namespace

TEST_F(CudaDeviceOps, EveryCommOperationMatchesHostBitForBit) {
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64, DType::f16, DType::bf16})
    for (int P : {1, 2, 4, 5}) {
      const auto diff = test::differing_bytes(test::run_all_operations(P, 1001, t, Device::Kind::cpu),
                                              test::run_all_operations(P, 1001, t, Device::Kind::cuda));
      for (int r = 0; r < P; ++r) EXPECT_EQ(diff[std::size_t(r)], 0u) << dtype_name(t) << " P=" << P << " rank " << r;
    }
}

TEST_F(CudaDeviceOps, ReduceManyAndScaleMatchTheCpu) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-100, 100);
  const std::size_t n = 4099;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (int inputs : {2, 5, 32, 40, 70}) {  // 40 and 70: more than one launch's 32 pointers
      std::vector<std::vector<char>> host(std::size_t(inputs), std::vector<char>(n * dtype_size(t)));
      std::vector<const void*> hp, dp;
      std::vector<std::unique_ptr<OnGpu>> dev;
      for (auto& h : host) {
        for (std::size_t i = 0; i < n; ++i) store_element(h.data(), i, t, dist(rng));
        hp.push_back(h.data());
        dev.push_back(std::make_unique<OnGpu>(h));
        dp.push_back(dev.back()->p);
      }
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
        std::vector<char> want(n * dtype_size(t));
        host_ops().reduce_many(want.data(), hp.data(), inputs, n, t, op);
        OnGpu out(std::vector<char>(want.size()));
        device_ops(Device::cuda(0)).reduce_many(out.p, dp.data(), inputs, n, t, op);
        EXPECT_EQ(std::memcmp(out.read().data(), want.data(), want.size()), 0) << dtype_name(t) << " x" << inputs;
        // In place into input 1 (out aliases an input that is not the first).
        device_ops(Device::cuda(0)).reduce_many(const_cast<void*>(dp[1]), dp.data(), inputs, n, t, op);
        EXPECT_EQ(std::memcmp(dev[1]->read().data(), want.data(), want.size()), 0) << "in place";
        copy_bytes(const_cast<void*>(dp[1]), host[1].data(), host[1].size());  // restore input 1
        // scale and divide, as scale_in_place and finish_average run them
        std::vector<char> scaled = want;
        scale_in_place(scaled.data(), n, t, 0.37);
        scale_in_place(out.p, n, t, 0.37);
        EXPECT_EQ(std::memcmp(out.read().data(), scaled.data(), scaled.size()), 0) << "scale " << dtype_name(t);
        finish_average(scaled.data(), n, t, ReduceOp::avg, 3);
        finish_average(out.p, n, t, ReduceOp::avg, 3);
        EXPECT_EQ(std::memcmp(out.read().data(), scaled.data(), scaled.size()), 0) << "average " << dtype_name(t);
      }
    }
}

TEST_F(CudaDeviceOps, CollectivesLabFourRanksOnOneGpuEveryAlgorithm) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32})
    for (const char* op : {"sum", "avg", "max"}) {
      LabConfig cfg;
      cfg.ranks = 4;
      cfg.bytes = std::uint64_t(dtype_size(t)) * 100003;
      cfg.dtype = t;
      cfg.iters = 2;
      cfg.device = Device::Kind::cuda;
      cfg.options = {{"algo", "all"}, {"op", op}};
      Trace trace(4);
      const Report r = test::run_lab("collectives", cfg, trace);
      EXPECT_TRUE(r.ok) << dtype_name(t) << " " << op << "\n" << r.to_text();
    }
}
