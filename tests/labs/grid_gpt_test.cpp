// The grid lab with --model gpt (labs/grid/grid_gpt_stage.cpp): a tiny GPT pipelined over
// pp stages, tensor-parallel over tp, replicated over dp (ZeRO-1 too), ends every step with
// one rank's loss and its weights — both copies of the tied wte included — and every axis
// sends what the formulas say, recomputed here from the model's shapes.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "labs/grid/grid_lab.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;
using dtl::test::row;

namespace {

constexpr int kLayers = 4, kHidden = 32, kHeads = 4, kSeq = 8, kVocab = 64, kBatch = 16, kMicro = 4;

std::map<std::string, std::string> gpt_options(int dp, int tp, int pp, const char* zero, const char* schedule) {
  return {{"model", "gpt"},
          {"dp", std::to_string(dp)},
          {"tp", std::to_string(tp)},
          {"pp", std::to_string(pp)},
          {"zero", zero},
          {"schedule", schedule},
          {"layers", std::to_string(kLayers)},
          {"hidden", std::to_string(kHidden)},
          {"heads", std::to_string(kHeads)},
          {"seq", std::to_string(kSeq)},
          {"vocab", std::to_string(kVocab)},
          {"batch", std::to_string(kBatch)},
          {"micro-batches", std::to_string(kMicro)},
          {"steps", "3"}};
}

// The most bytes any rank sends per step on each axis (the report's rows), from the
// formulas: tp 4 all-reduces of R·h floats per block and micro-batch, one more on each end
// stage, the cross-entropy's 3 of R floats, each 2(T−1)/T on a ring; pp R·h floats per
// micro-batch each way across each boundary; dp an all-reduce of the stage's parameters
// (+ the loss, one double); the tied wte's gradient (V/T·h floats) between 2 ranks.
struct Expected {
  double dp = 0, tp = 0, pp = 0, embedding = 0;
};
Expected expected_bytes(int D, int T, int P) {
  const double h = kHidden, V = kVocab, S = kSeq, M = kMicro, R = S * kBatch / (D * M), ring = 2.0 * (T - 1) / T;
  const double block = 12 * h * h / T + 7 * h / T + 6 * h;  // 2 LayerNorms, c_attn, attn.c_proj, c_fc, mlp.c_proj
  Expected e;
  for (int p = 0; p < P; ++p) {
    const int nb = kLayers / P + (p < kLayers % P ? 1 : 0);
    const bool first = p == 0, last = p == P - 1;
    const double params = nb * block + (first ? V * h / T + S * h : 0) + (last ? 2 * h + (first ? 0 : V * h / T) : 0);
    e.dp = std::max(e.dp, 2.0 * (D - 1) / D * (4 * params + (last ? 8 : 0)));
    e.tp = std::max(e.tp, M * ring * 4 * (R * h * (4 * nb + first + last) + (last ? 3 * R : 0)));
    e.pp = std::max(e.pp, M * 4 * R * h * ((first ? 0 : 1) + (last ? 0 : 1)));
    if (P > 1 && (first || last)) e.embedding = 4 * V * h / T;
  }
  return e;
}

}  // namespace

TEST(GridGpt, EveryGridEndsWithOneRanksLossAndWeightsAndTheFormulasBytes) {
  struct Case {
    int dp, tp, pp;
    const char* zero;
    const char* schedule = "1f1b";
  };
  // GPipe keeps all M micro-batches' activations at once: each needs its own set.
  for (const Case& c : {Case{2, 2, 2, "0"}, Case{1, 2, 4, "0"}, Case{4, 1, 2, "0"}, Case{2, 4, 1, "0"},
                        Case{2, 2, 2, "1"}, Case{1, 2, 4, "0", "gpipe"}}) {
    Trace trace(8);
    const Report rep = dtl::test::run_for_results("grid", 8, gpt_options(c.dp, c.tp, c.pp, c.zero, c.schedule), trace);
    const Expected e = expected_bytes(c.dp, c.tp, c.pp);
    std::printf(
        "GPT dp %d × tp %d × pp %d, ZeRO-%s, %s: max diff vs 1 rank: loss %.2e, weights %.2e; bytes off the "
        "formula %.0f B\n",
        c.dp, c.tp, c.pp, c.zero, c.schedule, row(rep, "grid.loss_diff_vs_one_rank"),
        row(rep, "grid.weight_diff_vs_one_rank"), row(rep, "grid.bytes_vs_formula"));
    // fp32 sums in another order (per micro-batch, per rank): a few ulps of weights near 1
    // after 3 steps of lr 1e-3; a wrong gradient would be off by a share of lr.
    EXPECT_LE(row(rep, "grid.loss_diff_vs_one_rank"), 2e-6);
    EXPECT_LE(row(rep, "grid.weight_diff_vs_one_rank"), 2e-6);
    EXPECT_EQ(row(rep, "grid.dp_bytes"), e.dp);
    EXPECT_EQ(row(rep, "grid.tp_bytes"), e.tp);
    EXPECT_EQ(row(rep, "grid.pp_bytes"), e.pp);
    if (c.pp > 1)
      EXPECT_EQ(row(rep, "grid.embedding_bytes"), e.embedding);
    else
      EXPECT_EQ(rep.find("grid.embedding_bytes"), nullptr) << "one stage holds both ends: no embedding group";
    EXPECT_EQ(row(rep, "grid.bytes_vs_formula"), 0);  // every rank, every axis
    EXPECT_EQ(row(rep, "grid.optimizer_vs_formula"), 0);
    EXPECT_EQ(row(rep, "grid.activation_vs_formula"), 0);
    EXPECT_TRUE(rep.ok) << rep.to_text();
  }
}

TEST(GridGpt, BadShapesAreUsageErrorsNamingTheConstraint) {
  const LabInfo* lab = find_lab("grid");
  ASSERT_NE(lab, nullptr);
  auto expect_usage = [&](std::map<std::string, std::string> o, const std::string& words) {
    LabConfig cfg;
    cfg.ranks = 8;
    cfg.options = o;
    try {
      grid_settings(with_defaults(*lab, cfg), 8);
      ADD_FAILURE() << "no error, expected one saying '" << words << "'";
    } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what(); }
  };
  expect_usage({{"model", "gpt"}, {"heads", "6"}, {"hidden", "36"}, {"tp", "4"}, {"dp", "1"}, {"pp", "2"}},
               "heads 6 must be divisible by the tensor-parallel degree 4");
  expect_usage({{"model", "gpt"}, {"pp", "8"}, {"dp", "1"}, {"tp", "1"}, {"layers", "4"}}, "cannot fill --pp 8");
  expect_usage({{"model", "gpt"}, {"batch", "4"}}, "micro-batches of whole sequences");
  expect_usage({{"model", "gpt"}, {"vocab", "63"}}, "vocab 63 must be divisible");
  expect_usage({{"heads", "8"}}, "GPT options: add --model gpt");
  expect_usage({{"vocab", "64"}}, "GPT options: add --model gpt");  // given at its default: still refused
}
