// The emulated interconnect: a transfer never completes before the α-β model allows, a
// rank's concurrent sends queue on its link, collectives take at least their ring time,
// and bad link options are usage errors. (Lower bounds only: how close the emulation
// comes to the model is a benchmark's business, not a timed test's.)
#include "core/comm/link.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "core/error.h"
#include "core/theory/collectives.h"
#include "core/trace/trace.h"
#include "tests/test_util.h"

using namespace dtl;
using Clock = std::chrono::steady_clock;

namespace {
ThreadsOptions with_link(int P, LinkSpec link, Trace* trace = nullptr) {
  ThreadsOptions opt;
  opt.world_size = P;
  opt.link = link;
  opt.trace = trace;
  opt.timeout_s = 30;
  return opt;
}
}  // namespace

TEST(EmulatedLink, TransferTakesAtLeastAlphaPlusBytesOverBeta) {
  const LinkSpec link{"custom", 1.0, 200};  // 1 GB/s, 200 µs
  const std::size_t bytes = 1 << 20;        // ≈ 1.05 ms on the wire
  Trace trace(2);
  double elapsed = 0;
  const RunResult r = run_threads(with_link(2, link, &trace), [&](Comm& c) {
    std::vector<char> buf(bytes, 1);
    c.barrier();
    const auto t0 = Clock::now();
    if (c.rank() == 0)
      c.send(buf.data(), bytes, 1, 0);
    else
      c.recv(buf.data(), bytes, 0, 0);
    if (c.rank() == 1) elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  });
  ASSERT_TRUE(r.ok()) << r.error;
  const double model = link.alpha_s() + double(bytes) / link.beta_Bps();
  EXPECT_GE(elapsed, model) << "the receive completed before the link could have delivered it";
  for (const Event& e : trace.snapshot()) {
    if (e.kind != EventKind::recv) continue;
    EXPECT_GE(double(e.end_ns - e.begin_ns) * 1e-9, model * 0.999);
  }
}

TEST(EmulatedLink, ConcurrentSendsOfOneRankShareItsLink) {
  const LinkSpec link{"custom", 1.0, 0};
  const std::size_t bytes = 1 << 20;
  double elapsed = 0;
  const RunResult r = run_threads(with_link(3, link), [&](Comm& c) {
    std::vector<char> buf(bytes, 1);
    c.barrier();
    const auto t0 = Clock::now();
    if (c.rank() == 0) {  // two sends at once: they queue on rank 0's outgoing direction
      Request a = c.isend(buf.data(), bytes, 1, 0), b = c.isend(buf.data(), bytes, 2, 0);
      a.wait();
      b.wait();
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } else {
      c.recv(buf.data(), bytes, 0, 0);
    }
  });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GE(elapsed, 2 * double(bytes) / link.beta_Bps());
}

TEST(EmulatedLink, LibraryAllReduceTakesAtLeastItsRingTime) {
  const LinkSpec link{"custom", 2.0, 50};
  const std::size_t n = 1 << 18;  // 1 MiB of floats
  double elapsed = 0;
  const RunResult r = run_threads(with_link(4, link), [&](Comm& c) {
    std::vector<float> v(n, 1.0f);
    c.barrier();
    const auto t0 = Clock::now();
    c.all_reduce(v.data(), v.data(), n, DType::f32, ReduceOp::sum);
    if (c.rank() == 0) elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_EQ(v[n - 1], 4.0f);
  });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GE(elapsed, theory::library_collective_time(CollectiveKind::all_reduce, 4, double(n * 4),
                                                     {link.alpha_s(), link.beta_Bps()}));
}

TEST(EmulatedLink, PresetsAndUsageErrors) {
  EXPECT_DOUBLE_EQ(find_link("pcie4").bandwidth_GBps, 32);
  EXPECT_DOUBLE_EQ(find_link("nvlink4").bandwidth_GBps, 450);
  EXPECT_DOUBLE_EQ(find_link("eth100").bandwidth_GBps, 12.5);
  EXPECT_THROW(find_link("carrier-pigeon"), UsageError);
  EXPECT_THROW(make_link("pcie4", 10, 0), UsageError);
  EXPECT_THROW(make_link("", -1, 0), UsageError);
  EXPECT_THROW(make_link("", 0, 5), UsageError);
  EXPECT_FALSE(make_link("", 0, 0).active());
  EXPECT_TRUE(make_link("", 3, 1).active());
  // --link-slowdown K: K times the latency, 1/K the bandwidth, named so reports say it.
  const LinkSpec slow = make_link("pcie4", 0, 0, 100);
  EXPECT_DOUBLE_EQ(slow.bandwidth_GBps, 0.32);
  EXPECT_DOUBLE_EQ(slow.latency_us, 500);
  EXPECT_EQ(slow.name, "pcie4/100");
  EXPECT_THROW(make_link("pcie4", 0, 0, 0.5), UsageError);
  EXPECT_THROW(make_link("", 0, 0, 10), UsageError);  // nothing to slow down
}
