// Label gpu: the NCCL backend in one process, a thread per GPU, with as many ranks as this
// machine has GPUs. Every Comm operation (device buffers, and host buffers staged through
// the GPU) must give the same bits as the threads backend on host buffers; the collectives
// lab must pass its checks; a failing rank must end the run with its error, not a hang;
// and events must carry device times that fall inside the host's view of the run.
#include <gtest/gtest.h>

#include <chrono>

#include "core/comm/nccl_backend.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"
#include "kernels/cuda/device.h"
#include "labs/lab.h"
#include "tests/core/device_ops_check.h"
#include "tests/gpu/skip_without_gpu.h"

using namespace dtl;

namespace {

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    DTL_SKIP_WITHOUT_GPU();
    cuda::use_cuda_memory();
    gpus_ = nccl_visible_gpus(nullptr);
    ASSERT_GT(gpus_, 0);
  }
  int gpus_ = 0;
};

test::RankRunner nccl_runner(Trace* trace = nullptr) {
  return [trace](int P, const std::function<void(Comm&)>& body) {
    NcclOptions o;
    o.ranks = P;
    o.trace = trace;
    o.timeout_s = 60;
    const RunResult r = run_nccl_threads(o, body);
    ASSERT_TRUE(r.ok()) << r.error;
  };
}

}  // namespace

TEST_F(Nccl, EveryCommOperationMatchesTheThreadsBackend) {
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64, DType::f16, DType::bf16})
    for (Device::Kind kind : {Device::Kind::cuda, Device::Kind::cpu}) {  // device buffers, then staged host buffers
      const auto want = test::run_all_operations(gpus_, 1001, t, Device::Kind::cpu);
      const auto got = test::run_all_operations(gpus_, 1001, t, kind, nccl_runner());
      const auto diff = test::differing_bytes(want, got);
      for (int r = 0; r < gpus_; ++r)
        EXPECT_EQ(diff[std::size_t(r)], 0u)
            << dtype_name(t) << (kind == Device::Kind::cpu ? " host" : " device") << " buffers, rank " << r;
    }
}

TEST_F(Nccl, CollectivesLabPassesItsChecks) {
  const LabInfo* lab = find_lab("collectives");
  ASSERT_NE(lab, nullptr);
  LabConfig cfg;
  cfg.ranks = gpus_;
  cfg.bytes = 4 * 1000003;
  cfg.iters = 3;
  cfg.backend = "nccl";
  cfg.device = Device::Kind::cuda;
  cfg.options = {{"algo", "all"}, {"op", "avg"}};
  cfg = with_defaults(*lab, cfg);
  Trace trace(gpus_);
  Report report;
  nccl_runner (&trace)(gpus_, [&](Comm& c) {
    Report r = lab->run(c, cfg);
    if (c.rank() == 0) report = r;
  });
  EXPECT_TRUE(report.ok) << report.to_text();
  // Device times, moved onto the host clock, lie within the run (and end after they begin).
  const std::int64_t now = trace.now_ns();
  std::size_t collectives = 0;
  for (const Event& e : trace.snapshot()) {
    if (e.kind != EventKind::collective && e.kind != EventKind::send && e.kind != EventKind::recv) continue;
    ++collectives;
    EXPECT_LE(e.begin_ns, e.end_ns);
    EXPECT_GE(e.begin_ns, 0);
    EXPECT_LE(e.end_ns, now);
  }
  EXPECT_GT(collectives, 0u);
}

TEST_F(Nccl, AFailingRankEndsTheRunWithItsError) {
  NcclOptions o;
  o.ranks = gpus_;
  o.timeout_s = 20;
  o.faults.fault_rank = gpus_ - 1;  // throws at its first send
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run_nccl_threads(o, [](Comm& c) {
    MemoryTracker mem(c.rank(), nullptr);
    Tensor buf(mem, {1024}, DType::f32, MemTag::comm, Device::cuda(c.rank()));
    const int P = c.size();
    Request rx = c.irecv(buf.data(), 64, (c.rank() + P - 1) % P, 1);
    Request tx = c.isend(buf.data(), 64, (c.rank() + 1) % P, 1);
    rx.wait();
    tx.wait();
  });
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.failed_rank, gpus_ - 1) << r.error;
  EXPECT_NE(r.error.find("injected fault"), std::string::npos) << r.error;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
}
