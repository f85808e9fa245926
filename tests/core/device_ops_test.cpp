// Buffers on a device go through DeviceOps, never through the host: the threads backend's
// transfers and library collectives, finish_average, scale_in_place, ScratchBuffer and the
// collectives lab, checked on a stand-in device whose memory is unreadable from the host
// (tests/core/scrambled_device.h). Each result is compared, bit for bit, with the same
// operation on host buffers.
#include "core/memory/device_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/comm/dtype.h"
#include "core/error.h"
#include "core/memory/memory.h"
#include "core/memory/standin_device.h"
#include "core/trace/trace.h"
#include "labs/collectives/crafted.h"
#include "labs/lab.h"
#include "tests/core/device_ops_check.h"
#include "tests/labs/lab_test_util.h"
#include "tests/test_util.h"

using namespace dtl;

TEST(DeviceOps, HostIsTheDefaultAndOwnsEverything) {
  int x = 0;
  EXPECT_EQ(&device_ops_for(&x), &host_ops());
  EXPECT_EQ(&device_ops(Device::cpu()), &host_ops());
  if (!cuda_ops()) {
    EXPECT_THROW(device_ops(Device::cuda(0)), Error);  // says: use --device cpu
  }
}

TEST(DeviceOps, TheStandInCatchesHostAccess) {
  // The control for every test below: reading device memory from the host gives garbage.
  StandInDeviceScope scope;
  MemoryTracker mem(0, nullptr);
  Tensor t(mem, {4}, DType::f32, MemTag::comm, Device::cuda(0));
  const float ones[4] = {1, 1, 1, 1};
  copy_bytes(t.data(), ones, sizeof ones);
  EXPECT_NE(std::memcmp(t.data(), ones, sizeof ones), 0);  // the raw bytes are not the values
  float back[4] = {};
  copy_bytes(back, t.data(), sizeof back);
  EXPECT_EQ(std::memcmp(back, ones, sizeof ones), 0);
}

TEST(DeviceOps, ThreadsBackendOnDeviceBuffersMatchesHostBitForBit) {
  StandInDeviceScope scope;
  for (DType t : {DType::f32, DType::bf16, DType::i32, DType::i64, DType::f64})
    for (int P : {1, 3, 4}) {
      const auto host = test::run_all_operations(P, 37, t, Device::Kind::cpu);
      const long reductions_before = scope.ops.reductions;
      const auto device = test::run_all_operations(P, 37, t, Device::Kind::cuda);
      EXPECT_GT(scope.ops.reductions, reductions_before);
      const std::vector<std::size_t> differing = test::differing_bytes(host, device);
      for (int r = 0; r < P; ++r)
        EXPECT_EQ(differing[std::size_t(r)], 0u)
            << dtype_name(t) << " P=" << P << " rank " << r << ": bytes differing from the host run";
    }
}

TEST(DeviceOps, ScratchBufferLivesBesideItsBuffer) {
  StandInDeviceScope scope;
  MemoryTracker mem(0, nullptr);
  Tensor t(mem, {8}, DType::f32, MemTag::comm, Device::cuda(1));
  ScratchBuffer s(32, t.data()), h(32, nullptr);
  EXPECT_TRUE(scope.ops.owns(s.data()));
  EXPECT_EQ(scope.ops.index_of(s.data()), 1);
  EXPECT_FALSE(scope.ops.owns(h.data()));
}

TEST(DeviceOps, CollectivesLabRunsOnDeviceBuffers) {
  StandInDeviceScope scope;
  for (DType t : {DType::f32, DType::bf16})
    for (int P : {2, 3, 4})
      for (const char* op : {"sum", "avg"}) {
        LabConfig cfg;
        cfg.ranks = P;
        cfg.bytes = 4 * 1001;
        cfg.dtype = t;
        cfg.iters = 1;
        cfg.warmup = 0;
        cfg.device = Device::Kind::cuda;
        cfg.options = {{"algo", "all"}, {"op", op}};
        Trace trace(P);
        const long copies_before = scope.ops.copies;
        const Report r = test::run_lab("collectives", cfg, trace);
        EXPECT_TRUE(r.ok) << dtype_name(t) << " P=" << P << " " << op << "\n" << r.to_text();
        EXPECT_GT(scope.ops.copies, copies_before);
      }
}
