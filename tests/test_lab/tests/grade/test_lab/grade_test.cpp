// The graded test of the test lab's exercise, as every lab's grade_test.cpp: the learner's
// weighted_sum on 1 to 5 thread ranks against the float64 sum, and one all-reduce of 4n bytes.
#include <gtest/gtest.h>

#include <vector>

#include "tests/grade/grade_util.h"
#include "tests/test_lab/exercises/test_lab.h"

using namespace dtl;

TEST(WeightedSum, EveryRankHoldsTheFloat64WeightedSum) {
  for (int P : {1, 2, 3, 5})
    for (std::size_t n : {std::size_t(1), std::size_t(40), std::size_t(1003)}) {
      std::vector<std::vector<double>> got(static_cast<std::size_t>(P));
      const grade::GradedRun run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> x(n);
        for (std::size_t i = 0; i < n; ++i) x[i] = float(i % 5) - float(c.rank());
        ex::weighted_sum(c, x.data(), n);
        got[std::size_t(c.rank())].assign(x.begin(), x.end());
      });
      const std::string where = grade::on_case("weighted_sum", P, n);
      DTL_GRADE_ASSERT(run.error.empty()) << where << ": " << run.error;
      std::vector<double> want(n, 0.0);
      for (std::size_t i = 0; i < n; ++i)
        for (int r = 0; r < P; ++r) want[i] += double(r + 1) * (double(i % 5) - double(r));
      for (int r = 0; r < P; ++r) {
        grade::expect_same(got[std::size_t(r)], want, where + ", rank " + std::to_string(r));
        DTL_GRADE_EXPECT(run.ranks[std::size_t(r)].collective_bytes == std::vector<std::uint64_t>{4 * n})
            << where << ", rank " << r << ": expected one all-reduce of " << 4 * n << " bytes";
      }
    }
}
