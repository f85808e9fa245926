// The grid lab (labs/grid/): the equivalence table — 2×2×2, 1×2×4, 4×1×2, 2×4×1
// (dp×tp×pp) and 2×2×2 with ZeRO-1 on the data axis end with one rank's weights — every
// axis's bytes on every rank equal the formulas, the optimizer state and activations
// equal theirs, and bad grids are usage errors naming the constraint.
#include "labs/grid/grid_lab.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;
using dtl::test::row;

TEST(GridLab, EveryGridEndsWithOneRanksWeightsAndTheFormulasBytes) {
  struct Case {
    int dp, tp, pp;
    const char* zero;
  };
  for (const Case& c :
       {Case{2, 2, 2, "0"}, Case{1, 2, 4, "0"}, Case{4, 1, 2, "0"}, Case{2, 4, 1, "0"}, Case{2, 2, 2, "1"}}) {
    Trace trace(8);
    const Report rep = dtl::test::run_for_results("grid", 8,
                                                  {{"dp", std::to_string(c.dp)},
                                                   {"tp", std::to_string(c.tp)},
                                                   {"pp", std::to_string(c.pp)},
                                                   {"zero", c.zero},
                                                   {"steps", "3"}},
                                                  trace);
    std::printf("dp %d × tp %d × pp %d, ZeRO-%s: max weight diff vs 1 rank %.2e, bytes off the formula %.0f B\n", c.dp,
                c.tp, c.pp, c.zero, row(rep, "grid.weight_diff_vs_one_rank"), row(rep, "grid.bytes_vs_formula"));
    EXPECT_LE(row(rep, "grid.weight_diff_vs_one_rank"), 1e-6);
    EXPECT_EQ(row(rep, "grid.bytes_vs_formula"), 0);
    EXPECT_EQ(row(rep, "grid.optimizer_vs_formula"), 0);
    EXPECT_EQ(row(rep, "grid.activation_vs_formula"), 0);
    EXPECT_TRUE(rep.ok) << rep.to_text();
  }
}

TEST(GridLab, ZeroOneShardsTheOptimizerStateOverTheDataAxis) {
  Trace t0(8), t1(8);
  const Report plain = dtl::test::run_for_results("grid", 8, {{"zero", "0"}}, t0);
  const Report zero1 = dtl::test::run_for_results("grid", 8, {{"zero", "1"}}, t1);
  // D = 2: each rank keeps half of AdamW's m and v (its padded shard).
  EXPECT_NEAR(row(zero1, "grid.optimizer_bytes"), row(plain, "grid.optimizer_bytes") / 2, 8.0);
  EXPECT_EQ(row(zero1, "grid.dp_bytes"), row(plain, "grid.dp_bytes"));  // reduce-scatter + all-gather = all-reduce
}

TEST(GridLab, BadGridsAreUsageErrorsNamingTheConstraint) {
  auto expect_usage = [](int ranks, std::map<std::string, std::string> o, const std::string& words) {
    dtl::test::expect_usage_error("grid", ranks, std::move(o), words);
  };
  expect_usage(4, {{"dp", "2"}}, "product dp·tp·pp");
  expect_usage(6, {}, "multiple of tp·pp");
  expect_usage(8, {{"hidden", "3"}, {"tp", "8"}, {"dp", "1"}, {"pp", "1"}}, "--tp");
  expect_usage(8, {{"pp", "8"}, {"dp", "1"}, {"tp", "1"}, {"layers", "4"}}, "--layers");
  expect_usage(8, {{"batch", "3"}, {"seq", "1"}}, "micro-batches");
  // 65536 × 65536 tokens wrap the int count to 0: a run of nan losses that passed every check.
  expect_usage(2, {{"batch", "65536"}, {"seq", "65536"}, {"tp", "1"}}, "tokens per step");
}
