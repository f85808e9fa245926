// Graded tests of the DDP exercises (exercises/ddp.h): bucket layouts computed by hand,
// gradients compared with a single-process reference, launches checked while a simulated
// backward runs (a bucket must be in flight as soon as its last layer is done).
#include <cmath>
#include <optional>

#include "exercises/ddp.h"
#include "labs/collectives/crafted.h"
#include "tests/grade/grade_util.h"

using namespace dtl;
using grade::kGradedWorldSizes;

namespace {

// "assign_buckets(layers of 10, 20, 30, 40 floats, capacity 50)": the case, as a learner reads it.
std::string bucket_case(const std::vector<std::size_t>& sizes, std::size_t capacity) {
  std::string s = "assign_buckets(layers of ";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + " floats, capacity " + std::to_string(capacity) + ")";
}

std::string describe(const ex::GradBucket& b) {
  return "layers " + std::to_string(b.first_layer) + ".." + std::to_string(b.last_layer) + ", floats [" +
         std::to_string(b.begin) + ", " + std::to_string(b.end) + ")";
}

// The exercise's buckets, or a failure naming the case when it throws (then nullopt).
std::optional<std::vector<ex::GradBucket>> buckets_of(const std::vector<std::size_t>& sizes, std::size_t capacity) {
  try {
    return ex::assign_buckets(sizes, capacity);
  } catch (const std::exception& e) {
    ADD_FAILURE() << bucket_case(sizes, capacity) << ": " << e.what();
    return std::nullopt;
  }
}

// Checks bucket i of `got` against the hand-computed {first, last, begin, end}.
void expect_bucket(const std::string& what, const std::vector<ex::GradBucket>& got, std::size_t i,
                   const ex::GradBucket& want) {
  const ex::GradBucket& b = got[i];
  DTL_GRADE_EXPECT(b.first_layer == want.first_layer && b.last_layer == want.last_layer && b.begin == want.begin &&
                   b.end == want.end)
      << what << ": bucket " << i << " is " << describe(b) << ", expected " << describe(want);
}

}  // namespace

TEST(AssignBuckets, ReverseLayerOrderClosedAtCapacity) {
  const std::vector<std::size_t> sizes{10, 20, 30, 40};
  // Capacity 50: {layer 3, layer 2} closes at 70, then {1, 0}.
  const auto two = buckets_of(sizes, 50);
  ASSERT_TRUE(two);
  DTL_GRADE_ASSERT(two->size() == 2u) << bucket_case(sizes, 50) << ": " << two->size() << " buckets, expected 2";
  expect_bucket(bucket_case(sizes, 50), *two, 0, {2, 3, 30, 100});
  expect_bucket(bucket_case(sizes, 50), *two, 1, {0, 1, 0, 30});
  const auto one = buckets_of(sizes, 1000);
  ASSERT_TRUE(one);
  DTL_GRADE_ASSERT(one->size() == 1u) << bucket_case(sizes, 1000) << ": " << one->size() << " buckets, expected 1";
  expect_bucket(bucket_case(sizes, 1000), *one, 0, {0, 3, 0, 100});
  const auto each = buckets_of(sizes, 1);
  ASSERT_TRUE(each);
  DTL_GRADE_ASSERT(each->size() == 4u) << bucket_case(sizes, 1) << ": " << each->size() << " buckets, expected 4";
  for (int i = 0; i < 4; ++i)
    DTL_GRADE_EXPECT((*each)[std::size_t(i)].first_layer == 3 - i)
        << bucket_case(sizes, 1) << ": bucket " << i << " starts at layer " << (*each)[std::size_t(i)].first_layer
        << ", expected " << 3 - i << " (the last layer's bucket first)";
}

TEST(AssignBuckets, BucketsTileTheBufferExactly) {
  const std::vector<std::size_t> sizes{7, 1, 300, 2, 2, 90, 5};
  for (std::size_t cap : {1u, 3u, 50u, 100u, 400u, 10000u}) {
    const auto b = buckets_of(sizes, cap);
    ASSERT_TRUE(b);
    const std::string what = bucket_case(sizes, cap);
    std::size_t expect_end = 407;
    int expect_last = 6;
    for (std::size_t i = 0; i < b->size(); ++i) {  // contiguous from the end of the buffer to its start
      const ex::GradBucket& x = (*b)[i];
      DTL_GRADE_EXPECT(x.end == expect_end && x.last_layer == expect_last && x.first_layer <= x.last_layer)
          << what << ": bucket " << i << " is " << describe(x) << ", expected it to end at layer " << expect_last
          << ", float " << expect_end << " (where the bucket before it began)";
      expect_end = x.begin;
      expect_last = x.first_layer - 1;
    }
    DTL_GRADE_EXPECT(expect_end == 0u) << what << ": the buckets leave floats [0, " << expect_end << ") uncovered";
  }
}

TEST(LaunchReadyBuckets, EachBucketStartsWhenItsLastLayerIsDone) {
  // Layers of 40, 30, 20, 10, 25 floats, capacity 35, bucketed by hand (not with the
  // learner's assign_buckets, so this exercise does not depend on that one).
  const std::vector<ex::GradBucket> buckets{{3, 4, 90, 125}, {1, 2, 40, 90}, {0, 0, 0, 40}};
  for (int P : kGradedWorldSizes) {
    const std::string w =
        grade::on_ranks("launch_ready_buckets", P) + ", 5 layers in " + grade::count_of(buckets.size(), "bucket");
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
          problem = "after layer " + std::to_string(layer) + " there are " + std::to_string(pending.size()) +
                    " all-reduces in flight, expected " + std::to_string(ready);
      }
      for (Request& r : pending) r.wait();
      std::vector<double> want(125), got(g.begin(), g.end());
      for (std::size_t i = 0; i < 125; ++i) want[i] = crafted_expected(i, P, ReduceOp::avg, DType::f32);
      grade::expect_same(got, want, w + ", rank " + std::to_string(c.rank()) + " after waiting");
    });
    DTL_ASSERT_RAN(run, w);
    DTL_GRADE_EXPECT(problem.empty()) << w << ": " << problem;
    const std::size_t calls = run.ranks[0].collectives.size();
    DTL_GRADE_EXPECT(calls == buckets.size())
        << w << ": " << calls << " all-reduces, expected " << buckets.size() << " (one per bucket)";
  }
}

TEST(WaitForBuckets, WaitsForEveryRequestAndClears) {
  const std::string w = grade::on_ranks("wait_for_buckets", 4) + " with 2 all-reduces in flight";
  std::vector<std::string> problems(4);
  const auto run = grade::run_graded(4, [&](Comm& c) {
    std::vector<float> a(100, float(c.rank())), b(50, 1.0f);
    std::vector<Request> pending{c.iall_reduce(a.data(), a.data(), 100, DType::f32, ReduceOp::sum),
                                 c.iall_reduce(b.data(), b.data(), 50, DType::f32, ReduceOp::sum)};
    ex::wait_for_buckets(pending);
    std::string& p = problems[std::size_t(c.rank())];
    if (!pending.empty())
      p = "pending still holds " + grade::count_of(pending.size(), "request");
    else if (a[99] != 6.0f || b[0] != 4.0f)  // 0 + 1 + 2 + 3, and 4 · 1: complete when the call returned
      p = "returned before the all-reduces completed (element 99 is " + grade::plain(a[99]) + ", expected 6)";
  });
  DTL_ASSERT_RAN(run, w);
  for (int r = 0; r < 4; ++r)
    DTL_GRADE_EXPECT(problems[std::size_t(r)].empty()) << w << ", rank " << r << ": " << problems[std::size_t(r)];
}

TEST(AverageGradients, SumThenScaleEqualsTheMean) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : grade::kGradedCounts) {
      const std::string w = grade::on_case("average_gradients", P, n);
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> g(n);
        fill_crafted(g.data(), n, DType::f32, c.rank());
        ex::average_gradients(c, {g.data(), DType::f32}, n);
        double worst = 0;
        std::size_t at = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const double mean = crafted_expected(i, P, ReduceOp::sum, DType::f32) / P;
          const double d = std::fabs(double(g[i]) - mean) / std::max(1.0, std::fabs(mean));
          if (!(d <= worst)) {  // NaN counts as the worst
            worst = d;
            at = i;
          }
        }
        DTL_GRADE_EXPECT(worst < 1e-6) << w << ", rank " << c.rank() << ": element " << at << " is " << g[at]
                                       << ", expected the mean "
                                       << crafted_expected(at, P, ReduceOp::sum, DType::f32) / P;
      });
      DTL_ASSERT_RAN(run, w);
    }
}

// Mixed precision: bf16 gradients are averaged in bf16 (sum, then one rounding per
// scaling): within a few bf16 ulps (2^-8 relative) of the mean.
TEST(AverageGradients, Bf16GradientsAverageInBf16) {
  for (int P : kGradedWorldSizes) {
    const std::string w = grade::on_ranks("average_gradients", P) + ", 1000 bf16 gradients";
    const auto run = grade::run_graded(P, [&](Comm& c) {
      const std::size_t n = 1000;
      std::vector<std::uint16_t> g(n);
      for (std::size_t i = 0; i < n; ++i) g[i] = float_to_bf16(float(int(i % 17) - 8 + c.rank()));  // exact in bf16
      ex::average_gradients(c, {g.data(), DType::bf16}, n);
      double worst = 0;
      std::size_t at = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double mean = double(int(i % 17) - 8) + (P - 1) / 2.0;
        const double d = std::fabs(double(bf16_to_float(g[i])) - mean) / std::max(1.0, std::fabs(mean));
        if (!(d <= worst)) {
          worst = d;
          at = i;
        }
      }
      DTL_GRADE_EXPECT(worst < 2.0 / 256)
          << w << ", rank " << c.rank() << ": element " << at << " is " << bf16_to_float(g[at])
          << ", expected the mean " << double(int(at % 17) - 8) + (P - 1) / 2.0 << " within 2^-7";
    });
    DTL_ASSERT_RAN(run, w);
  }
}

TEST(SyncThisMicroBatch, OnlyTheLastMicroBatchSynchronizes) {
  for (int k = 1; k <= 6; ++k)
    for (int mb = 0; mb < k; ++mb) {
      const std::string w = "sync_this_micro_batch(" + std::to_string(mb) + ", " + std::to_string(k) + ")";
      bool sync = false;
      try {
        sync = ex::sync_this_micro_batch(mb, k);
      } catch (const std::exception& e) { FAIL() << w << ": " << e.what(); }
      DTL_GRADE_EXPECT(sync == (mb == k - 1))
          << w << " is " << (sync ? "true" : "false") << ", expected " << (mb == k - 1 ? "true" : "false")
          << " (micro-batch " << mb << " of " << k << ")";
    }
}
