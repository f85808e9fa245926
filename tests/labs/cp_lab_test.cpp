// The context-parallel lab (labs/context_parallel/cp_lab.cpp): on 2 and 4 thread ranks, each
// algorithm with each split trains the tiny GPT to the plain GPT's loss, gradients and weights
// on one rank; every attention call sends exactly its formula's bytes; the activation memory
// per rank equals its formula and is 1/P of the same attention on one rank (all-gather: more,
// it keeps the gathered K/V); zig-zag evens the causal pairs that a contiguous split leaves
// uneven. Bad shapes and options without effect are usage errors naming the option.
#include "labs/context_parallel/cp_lab.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "tests/labs/lab_test_util.h"

using namespace dtl;
using dtl::test::row;

namespace {

Report run_cp_case(int ranks, std::map<std::string, std::string> options) {
  Trace trace(ranks);
  options.emplace("layers", "2");
  options.emplace("hidden", "16");
  options.emplace("seq", "16");
  options.emplace("batch", "2");
  return dtl::test::run_for_results("context_parallel", ranks, std::move(options), trace);
}

}  // namespace

TEST(CpLab, EveryAlgorithmAndSplitEqualsOneRankAndItsFormulas) {
  for (int P : {2, 4})
    for (const char* algo : {"ring", "all-gather", "ulysses"})
      for (const char* split : {"contiguous", "zigzag"}) {
        if (std::string(algo) == "ulysses" && std::string(split) == "zigzag") continue;  // refused: no effect
        std::map<std::string, std::string> o = {{"algo", algo}};
        if (std::string(algo) != "ulysses") o["split"] = split;
        const Report rep = run_cp_case(P, o);
        const std::string c = std::string(algo) + ".";
        std::printf(
            "%-10s %-10s P %d: grad %.2e, weights %.2e, bytes fwd %.0f bwd %.0f, activation %.0f B (%.3f of 1 rank)\n",
            algo, split, P, row(rep, c + "grad_vs_one_rank"), row(rep, c + "weights_vs_one_rank"),
            row(rep, c + "bytes_fwd_per_layer"), row(rep, c + "bytes_bwd_per_layer"),
            row(rep, c + "activation_per_rank"), row(rep, c + "activation_vs_one_rank"));
        EXPECT_TRUE(rep.ok) << rep.to_text();
        EXPECT_LE(row(rep, c + "grad_vs_one_rank"), 1e-5);
        const cp::CpSplit sp = std::string(split) == "zigzag" ? cp::CpSplit::zigzag : cp::CpSplit::contiguous;
        const cp::CpAlgo a = std::string(algo) == "ring"         ? cp::CpAlgo::ring
                             : std::string(algo) == "all-gather" ? cp::CpAlgo::all_gather
                                                                 : cp::CpAlgo::ulysses;
        const cp::CpBytes want = cp::cp_bytes_per_rank(a, cp::CpLayer{{16, 2, 4, 4}, sp}, P);
        EXPECT_EQ(row(rep, c + "bytes_fwd_per_layer"), double(want.forward));
        EXPECT_EQ(row(rep, c + "bytes_bwd_per_layer"), double(want.backward));
        if (a != cp::CpAlgo::all_gather) {
          EXPECT_NEAR(row(rep, c + "activation_vs_one_rank"), 1.0 / P, 1e-12);
        } else {
          EXPECT_GT(row(rep, c + "activation_vs_one_rank"), 1.0 / P);
        }
        const double pairs_imbalance = rep.find(c + "attention_time_imbalance")->predicted.value_or(0);
        if (sp == cp::CpSplit::zigzag || a == cp::CpAlgo::ulysses) {
          EXPECT_EQ(pairs_imbalance, 1.0);
        } else {
          EXPECT_GT(pairs_imbalance, 1.0);
        }
        if (a == cp::CpAlgo::ring) { EXPECT_GE(row(rep, c + "ring_hop_time"), row(rep, c + "ring_exposed_time")); }
      }
}

// --algo all: a column per algorithm, the same loss in each; the splits' balance rows.
TEST(CpLab, AllAlgorithmsSideBySide) {
  const Report rep = run_cp_case(4, {{"algo", "all"}, {"steps", "1"}});
  EXPECT_TRUE(rep.ok) << rep.to_text();
  ASSERT_EQ(rep.columns.size(), 3u);
  EXPECT_EQ(row(rep, "ring.loss_first"), row(rep, "ulysses.loss_first"));
  EXPECT_NEAR(row(rep, "balance_contiguous"), 58.0 / 34.0, 1e-12);  // last rank Σ13..16 = 58 of 136/4 = 34
  EXPECT_EQ(row(rep, "balance_zigzag"), 1.0);
  EXPECT_GT(row(rep, "activation_one_rank_dense"), row(rep, "ring.activation_one_rank"));  // it keeps B·A·S²
}

TEST(CpLab, BadShapesAndOptionsWithoutEffectAreUsageErrors) {
  using dtl::test::expect_usage_error;
  expect_usage_error("context_parallel", 4, {{"seq", "18"}}, "--seq 18");
  expect_usage_error("context_parallel", 4, {{"seq", "20"}, {"split", "zigzag"}}, "--split zigzag");
  expect_usage_error("context_parallel", 4, {{"heads", "2"}, {"hidden", "16"}, {"algo", "ulysses"}}, "--heads 2");
  expect_usage_error("context_parallel", 4, {{"algo", "ulysses"}, {"split", "zigzag"}}, "--split has no effect");
  expect_usage_error("context_parallel", 1, {{"split", "zigzag"}}, "--split has no effect");
  expect_usage_error("context_parallel", 2, {{"hidden", "30"}, {"heads", "4"}}, "--hidden");
  expect_usage_error("context_parallel", 2, {{"seq", "8192"}, {"hidden", "1024"}, {"batch", "256"}}, "--seq");
}
