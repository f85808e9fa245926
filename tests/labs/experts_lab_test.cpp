// The experts lab (labs/experts/): on 1, 2 and 4 thread ranks, with drops and without, balanced
// and with hot experts, the loss, every gradient, the final weights and the routing equal one
// rank's (routing the same groups), every all_to_allv's bytes equal the routed rows, and the
// hot experts of --router-skew show up as load, drops and a busier rank. Bad shapes are usage
// errors naming what to change.
#include "labs/experts/experts_lab.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "core/error.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;
using dtl::test::row;

namespace {

Report run_experts_case(int ranks, std::map<std::string, std::string> options) {
  Trace trace(ranks);
  return dtl::test::run_for_results("experts", ranks, std::move(options), trace);
}

}  // namespace

TEST(ExpertsLab, EveryShapeEqualsOneRankAndItsRoutedBytes) {
  struct Case {
    int ranks;
    const char* overflow;
    const char* skew;
    const char* top_k;
  };
  for (const Case& c : {Case{1, "drop", "0", "2"}, Case{2, "drop", "0", "1"}, Case{4, "drop", "0", "2"},
                        Case{4, "pad", "0", "2"}, Case{4, "drop", "3", "2"}, Case{4, "pad", "3", "3"}}) {
    const Report rep =
        run_experts_case(c.ranks, {{"overflow", c.overflow}, {"router-skew", c.skew}, {"top-k", c.top_k}});
    std::printf("EP %d, %s, skew %s, top-%s: grad diff %.2e, weight diff %.2e, dropped %.0f, bytes off %.0f B\n",
                c.ranks, c.overflow, c.skew, c.top_k, row(rep, "grad_vs_one_rank"), row(rep, "weights_vs_one_rank"),
                row(rep, "dropped_vs_one_rank"), row(rep, "a2a.bytes_vs_routing"));
    EXPECT_TRUE(rep.ok) << rep.to_text();
    EXPECT_LE(row(rep, "grad_vs_one_rank"), 1e-5);
    EXPECT_EQ(row(rep, "routing_vs_one_rank"), 0);
    EXPECT_EQ(row(rep, "a2a.bytes_vs_routing"), 0);
    if (std::string(c.overflow) == "pad") { EXPECT_EQ(row(rep, "dropped_vs_one_rank"), 0) << "pad drops nothing"; }
  }
}

// Issue 46: at hidden 256 the weights part by more than the fixed 0.02·lr the lab used to
// allow (2.4e-5 against 2e-5; 1.2e-4 at hidden 1024): AdamW's first update g/(|g| + ε) turns a
// sum-order difference of a gradient near ε into up to 2·lr. The bound is the run's own
// update difference: after one step the weights differ by exactly lr times it (no decay).
TEST(ExpertsLab, AWideGptsWeightsPartOnlyByAdamsFirstUpdate) {
  const Report rep = run_experts_case(2, {{"model", "gpt"}, {"hidden", "256"}, {"steps", "1"}});
  const double lr = 1e-3, update = row(rep, "first_update_vs_one_rank"), weights = row(rep, "weights_vs_one_rank");
  std::printf("GPT hidden 256, EP 2: grad diff %.2e, first update diff %.3f·lr, weight diff %.3e (%.3f·lr)\n",
              row(rep, "grad_vs_one_rank"), update, weights, weights / lr);
  EXPECT_TRUE(rep.ok) << rep.to_text();
  EXPECT_LE(row(rep, "grad_vs_one_rank"), 1e-5) << "the gradients themselves agree to fp32 sum order";
  EXPECT_NEAR(weights, lr * update, 1e-3 * lr) << "one step: the weights part by lr × the update difference";
}

// The tiny GPT with every MLP a mixture of experts: attention and embeddings data-parallel,
// the experts spread; the loss, every gradient (the GPT's and the experts'), the weights and
// the routing equal one rank's running all the sequences with the ranks' as its groups.
TEST(ExpertsLab, TheGptWithMoeMlpsEqualsOneRank) {
  for (int ranks : {2, 4})
    for (const char* skew : {"0", "2"}) {
      const Report rep = run_experts_case(ranks, {{"model", "gpt"}, {"router-skew", skew}});
      std::printf("GPT, EP %d, skew %s: loss %.4f -> %.4f, grad diff %.2e, weight diff %.2e, dropped %.0f\n", ranks,
                  skew, row(rep, "loss.first"), row(rep, "loss.last"), row(rep, "grad_vs_one_rank"),
                  row(rep, "weights_vs_one_rank"), row(rep, "dropped_vs_one_rank"));
      EXPECT_TRUE(rep.ok) << rep.to_text();
      EXPECT_EQ(row(rep, "routing_vs_one_rank"), 0);
      EXPECT_EQ(row(rep, "a2a.bytes_vs_routing"), 0);
    }
}

// Balanced routing sends (T/EP)·k·h·(EP−1)/EP·4 bytes to other ranks; the skewed router sends
// the first rank's experts most of the tokens: more drops, a busier expert, a busier rank.
TEST(ExpertsLab, HotExpertsDropMoreAndLoadOneRank) {
  const Report even = run_experts_case(4, {{"steps", "2"}});
  const Report hot = run_experts_case(4, {{"steps", "2"}, {"router-skew", "4"}});
  const double balanced = 256.0 / 4 * 2 * 32 * (4 - 1) / 4 * 4;  // T/EP · k · h · (EP−1)/EP · 4 B
  std::printf("to other ranks: even %.0f B, hot %.0f B, balanced formula %.0f B; busiest expert ÷ mean %.2f vs %.2f\n",
              row(even, "a2a.to_other_ranks"), row(hot, "a2a.to_other_ranks"), balanced,
              row(even, "load.busiest_expert"), row(hot, "load.busiest_expert"));
  EXPECT_NEAR(row(even, "a2a.to_other_ranks"), balanced, 0.1 * balanced) << "random routing is close to balanced";
  EXPECT_GT(row(hot, "load.busiest_expert"), 2 * row(even, "load.busiest_expert"));
  EXPECT_GT(row(hot, "load.dropped_share"), 5 * row(even, "load.dropped_share") + 0.05);
  EXPECT_GT(row(hot, "load.rows_max_over_mean"), 1.5);
}

TEST(ExpertsLab, BadShapesAreUsageErrorsNamingWhatToChange) {
  auto expect_usage = [](int ranks, std::map<std::string, std::string> o, const std::string& words) {
    dtl::test::expect_usage_error("experts", ranks, std::move(o), words);
  };
  expect_usage(3, {}, "--experts 8 must be divisible");
  expect_usage(4, {{"tokens", "250"}}, "--tokens 250");
  expect_usage(2, {{"experts", "4"}, {"top-k", "5"}}, "--top-k 1..4");
  expect_usage(2, {{"overflow", "pad"}, {"capacity-factor", "2"}}, "no effect");
  expect_usage(2, {{"seq", "8"}}, "--model gpt");
  expect_usage(1, {{"experts", "1"}, {"top-k", "1"}, {"router-skew", "1"}}, "no effect with one expert");
  expect_usage(2, {{"model", "gpt"}, {"tokens", "64"}}, "--tokens has no effect");
  expect_usage(4, {{"model", "gpt"}, {"batch", "6"}}, "--batch 6 must be divisible");
}
