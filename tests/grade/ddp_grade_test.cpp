// Graded tests of the DDP exercises (exercises/ddp.h): bucket layouts computed by hand,
// gradients compared with a single-process reference, launches checked while a simulated
// backward runs (a bucket must be in flight as soon as its last layer is done).
#include <cmath>

#include "exercises/ddp.h"
#include "labs/collectives/crafted.h"
#include "tests/grade/grade_util.h"

using namespace dtl;
using grade::kGradedWorldSizes;

namespace {
bool same(const ex::GradBucket& a, int first, int last, std::size_t begin, std::size_t end) {
  return a.first_layer == first && a.last_layer == last && a.begin == begin && a.end == end;
}
}  // namespace

TEST(AssignBuckets, ReverseLayerOrderClosedAtCapacity) {
  // Layers of 10, 20, 30, 40 floats; capacity 50: {layer 3, layer 2} closes at 70, then {1, 0}.
  const auto b = ex::assign_buckets({10, 20, 30, 40}, 50);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_TRUE(same(b[0], 2, 3, 30, 100)) << "first bucket: layers 2..3, floats [30, 100)";
  EXPECT_TRUE(same(b[1], 0, 1, 0, 30)) << "second bucket: layers 0..1, floats [0, 30)";
  const auto one = ex::assign_buckets({10, 20, 30, 40}, 1000);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(same(one[0], 0, 3, 0, 100));
  const auto each = ex::assign_buckets({10, 20, 30, 40}, 1);
  ASSERT_EQ(each.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(each[std::size_t(i)].first_layer, 3 - i) << "bucket " << i;
}

TEST(AssignBuckets, BucketsTileTheBufferExactly) {
  const std::vector<std::size_t> sizes{7, 1, 300, 2, 2, 90, 5};
  for (std::size_t cap : {1u, 3u, 50u, 100u, 400u, 10000u}) {
    const auto b = ex::assign_buckets(sizes, cap);
    std::size_t expect_end = 407;
    int expect_last = 6;
    for (const auto& x : b) {  // contiguous from the end of the buffer to its start
      EXPECT_EQ(x.end, expect_end) << "capacity " << cap;
      EXPECT_EQ(x.last_layer, expect_last) << "capacity " << cap;
      EXPECT_LE(x.first_layer, x.last_layer);
      expect_end = x.begin;
      expect_last = x.first_layer - 1;
    }
    EXPECT_EQ(expect_end, 0u);
  }
}

TEST(LaunchReadyBuckets, EachBucketStartsWhenItsLastLayerIsDone) {
  const std::vector<std::size_t> sizes{40, 30, 20, 10, 25};
  const auto buckets = ex::assign_buckets(sizes, 35);  // a layout the reference computed
  for (int P : kGradedWorldSizes) {
    std::string problem;
    const auto run = grade::run_graded(P, [&](Comm& c) {
      std::vector<float> g(125);
      fill_crafted(g.data(), g.size(), DType::f32, c.rank());
      std::vector<Request> pending;
      std::size_t ready = 0;
      for (int layer = 4; layer >= 0; --layer) {  // backward: last layer first
        ex::launch_ready_buckets(c, {g.data(), DType::f32}, buckets, layer, pending);
        for (const auto& b : buckets) ready += b.first_layer == layer;
        if (pending.size() != ready && problem.empty())
          problem = "after layer " + std::to_string(layer) + " there should be " + std::to_string(ready) +
                    " buckets in flight, there are " + std::to_string(pending.size());
      }
      for (Request& r : pending) r.wait();
      std::vector<double> want(125), got(g.begin(), g.end());
      for (std::size_t i = 0; i < 125; ++i) want[i] = crafted_expected(i, P, ReduceOp::avg, DType::f32);
      EXPECT_TRUE(grade::same_values(got, want, "P=" + std::to_string(P) + " rank " + std::to_string(c.rank())));
    });
    DTL_ASSERT_RAN(run, "P=" + std::to_string(P));
    EXPECT_TRUE(problem.empty()) << problem;
    EXPECT_EQ(run.ranks[0].collectives.size(), buckets.size()) << "one all_reduce per bucket";
  }
}

TEST(WaitForBuckets, WaitsForEveryRequestAndClears) {
  const auto run = grade::run_graded(4, [](Comm& c) {
    std::vector<float> a(100, float(c.rank())), b(50, 1.0f);
    std::vector<Request> pending{c.iall_reduce(a.data(), a.data(), 100, DType::f32, ReduceOp::sum),
                                 c.iall_reduce(b.data(), b.data(), 50, DType::f32, ReduceOp::sum)};
    ex::wait_for_buckets(pending);
    EXPECT_TRUE(pending.empty());
    EXPECT_EQ(a[99], 6.0f);  // 0 + 1 + 2 + 3: complete when the call returned
    EXPECT_EQ(b[0], 4.0f);
  });
  DTL_ASSERT_RAN(run, "4 ranks");
}

TEST(AverageGradients, SumThenScaleEqualsTheMean) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : grade::kGradedCounts) {
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> g(n);
        fill_crafted(g.data(), n, DType::f32, c.rank());
        ex::average_gradients(c, {g.data(), DType::f32}, n);
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const double mean = crafted_expected(i, P, ReduceOp::sum, DType::f32) / P;
          worst = std::max(worst, std::fabs(double(g[i]) - mean) / std::max(1.0, std::fabs(mean)));
        }
        EXPECT_LT(worst, 1e-6) << "P=" << P << " n=" << n << ": largest relative difference " << worst;
      });
      DTL_ASSERT_RAN(run, "P=" + std::to_string(P));
    }
}

// Mixed precision: bf16 gradients are averaged in bf16 (sum, then one rounding per
// scaling): within a few bf16 ulps (2^-8 relative) of the mean.
TEST(AverageGradients, Bf16GradientsAverageInBf16) {
  for (int P : kGradedWorldSizes) {
    const auto run = grade::run_graded(P, [&](Comm& c) {
      const std::size_t n = 1000;
      std::vector<std::uint16_t> g(n);
      for (std::size_t i = 0; i < n; ++i) g[i] = float_to_bf16(float(int(i % 17) - 8 + c.rank()));  // exact in bf16
      ex::average_gradients(c, {g.data(), DType::bf16}, n);
      double worst = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double mean = double(int(i % 17) - 8) + (P - 1) / 2.0;
        worst = std::max(worst, std::fabs(double(bf16_to_float(g[i])) - mean) / std::max(1.0, std::fabs(mean)));
      }
      EXPECT_LT(worst, 2.0 / 256) << "P=" << P << ": largest relative difference " << worst;
    });
    DTL_ASSERT_RAN(run, "P=" + std::to_string(P));
  }
}

TEST(SyncThisMicroBatch, OnlyTheLastMicroBatchSynchronizes) {
  for (int k = 1; k <= 6; ++k)
    for (int mb = 0; mb < k; ++mb) EXPECT_EQ(ex::sync_this_micro_batch(mb, k), mb == k - 1) << "micro-batch " << mb << " of " << k;
}
