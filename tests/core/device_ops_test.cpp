// Buffers on a device go through DeviceOps, never through the host: the threads backend's
// transfers and library collectives, finish_average, scale_in_place, ScratchBuffer and the
// collectives lab, checked on a stand-in device whose memory is unreadable from the host
// (tests/core/scrambled_device.h). Each result is compared, bit for bit, with the same
// operation on host buffers.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/comm/dtype.h"
#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/memory/memory.h"
#include "core/trace/trace.h"
#include "labs/crafted.h"
#include "labs/lab.h"
#include "tests/core/scrambled_device.h"
#include "tests/labs/lab_test_util.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {

// Every library collective and a ring of recv_reduce/send on crafted inputs, on `device`;
// returns each rank's result bytes (downloaded to the host), rank by rank.
std::vector<std::vector<char>> run_all_operations(int P, std::size_t n, DType t, Device::Kind kind) {
  const std::size_t es = dtype_size(t);
  std::vector<std::vector<char>> results(static_cast<std::size_t>(P));
  test::run_ranks(P, [&](Comm& c) {
    MemoryTracker mem(c.rank(), nullptr);
    const Device dev = kind == Device::Kind::cpu ? Device::cpu() : Device::cuda(c.rank() % 2);
    const std::size_t total = n * std::size_t(P);
    Tensor in(mem, {std::int64_t(total)}, t, MemTag::comm, dev), out(mem, {std::int64_t(total)}, t, MemTag::comm, dev);
    std::vector<char> host(total * es), all;
    fill_crafted(host.data(), total, t, c.rank());
    auto upload = [&] { copy_bytes(in.data(), host.data(), host.size()); };
    auto keep = [&](const Tensor& x, std::size_t bytes) {
      std::vector<char> back(bytes);
      copy_bytes(back.data(), x.data(), bytes);
      all.insert(all.end(), back.begin(), back.end());
    };
    upload();
    c.all_reduce(in.data(), out.data(), total, t, ReduceOp::avg);  // out of place, divided by P
    keep(out, total * es);
    c.all_reduce(in.data(), in.data(), total, t, ReduceOp::max);   // in place
    keep(in, total * es);
    upload();
    c.reduce_scatter(in.data(), out.data(), n, t, ReduceOp::sum);
    keep(out, n * es);
    c.all_gather(in.data(), out.data(), n, t);
    keep(out, total * es);
    c.all_to_all(in.data(), out.data(), n, t);
    keep(out, total * es);
    c.reduce(in.data(), out.data(), total, t, ReduceOp::min, P - 1);
    if (c.rank() == P - 1) keep(out, total * es);
    c.broadcast(in.data(), total, t, 0);
    keep(in, total * es);
    // A ring step by hand: receive-and-reduce from the left, send right.
    upload();
    if (P > 1) {
      Request rx = c.irecv_reduce(in.data(), total, t, ReduceOp::sum, (c.rank() + P - 1) % P, 7);
      Request tx = c.isend(out.data(), total * es, (c.rank() + 1) % P, 7);
      rx.wait();
      tx.wait();
      Request rx2 = c.irecv(out.data(), total * es, (c.rank() + P - 1) % P, 8);  // and a plain copy
      Request tx2 = c.isend(in.data(), total * es, (c.rank() + 1) % P, 8);
      rx2.wait();
      tx2.wait();
    }
    keep(in, total * es);
    keep(out, total * es);
    // finish_average and scale_in_place dispatch on where the buffer lives.
    finish_average(in.data(), total, t, ReduceOp::avg, 3);
    if (t != DType::i32) scale_in_place(in.data(), total, t, 0.5);
    keep(in, total * es);
    results[std::size_t(c.rank())] = std::move(all);
  });
  return results;
}

}  // namespace

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
  test::ScrambledDeviceScope scope;
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
  test::ScrambledDeviceScope scope;
  for (DType t : {DType::f32, DType::bf16, DType::i32, DType::f64})
    for (int P : {1, 3, 4}) {
      const auto host = run_all_operations(P, 37, t, Device::Kind::cpu);
      const long reductions_before = scope.ops.reductions;
      const auto device = run_all_operations(P, 37, t, Device::Kind::cuda);
      EXPECT_GT(scope.ops.reductions, reductions_before);
      for (int r = 0; r < P; ++r) {
        const auto& h = host[std::size_t(r)];
        const auto& d = device[std::size_t(r)];
        ASSERT_EQ(h.size(), d.size());
        std::size_t differing = 0;
        for (std::size_t i = 0; i < h.size(); ++i) differing += h[i] != d[i];
        EXPECT_EQ(differing, 0u) << dtype_name(t) << " P=" << P << " rank " << r << ": bytes differing from the host run";
      }
    }
}

TEST(DeviceOps, ScratchBufferLivesBesideItsBuffer) {
  test::ScrambledDeviceScope scope;
  MemoryTracker mem(0, nullptr);
  Tensor t(mem, {8}, DType::f32, MemTag::comm, Device::cuda(1));
  ScratchBuffer s(32, t.data()), h(32, nullptr);
  EXPECT_TRUE(scope.ops.owns(s.data()));
  EXPECT_EQ(scope.ops.index_of(s.data()), 1);
  EXPECT_FALSE(scope.ops.owns(h.data()));
}

TEST(DeviceOps, CollectivesLabRunsOnDeviceBuffers) {
  test::ScrambledDeviceScope scope;
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
