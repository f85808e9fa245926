// The grid lab's memory per rank by tag against the planner's memory model (the functions
// `dtlab plan` uses, core/theory/plan.h), labs/grid/grid_planner.h: parameters, gradients and
// optimizer state on every rank, activations on rank 0 under 1F1B, exactly (ZeRO-1: within
// the padding of one element). The grids cover uneven stages (5 blocks on 2 and 4 stages),
// ZeRO-1 with a Ψ_rank that D does not divide, GPipe (activations not compared), and the GPT
// (--model gpt) with its embeddings and head on the end stages.
#include "labs/grid/grid_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/theory/plan.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;
using dtl::test::row;

namespace {

// |measured − predicted| of a planner row (the rows carry both).
double gap(const Report& rep, const char* id) {
  const ReportRow* r = rep.find(id);
  EXPECT_NE(r, nullptr) << "no row " << id;
  return r && r->predicted ? std::fabs(r->measured - *r->predicted) : NAN;
}

}  // namespace

TEST(GridPlanner, MemoryByTagMatchesThePlannersModelOnEveryGrid) {
  struct Case {
    int ranks;
    std::map<std::string, std::string> o;
  };
  const Case cases[] = {
      {8, {{"dp", "2"}, {"tp", "2"}, {"pp", "2"}, {"layers", "5"}}},
      {4, {{"dp", "1"}, {"tp", "1"}, {"pp", "4"}, {"layers", "5"}, {"micro-batches", "8"}}},
      {3, {{"dp", "3"}, {"tp", "1"}, {"pp", "1"}, {"zero", "1"}, {"seq", "12"}}},
      {4, {{"dp", "2"}, {"tp", "1"}, {"pp", "2"}, {"zero", "1"}, {"schedule", "gpipe"}}},
      // The GPT: embeddings on the first stage, ln_f and the head's wte on the last (3 blocks on 2
      // stages: uneven), and P = 1 with both ends on one stage.
      {8,
       {{"model", "gpt"},
        {"dp", "2"},
        {"tp", "2"},
        {"pp", "2"},
        {"layers", "3"},
        {"hidden", "32"},
        {"seq", "8"},
        {"batch", "16"},
        {"zero", "1"}}},
      {2,
       {{"model", "gpt"},
        {"dp", "1"},
        {"tp", "2"},
        {"pp", "1"},
        {"layers", "2"},
        {"hidden", "32"},
        {"seq", "8"},
        {"batch", "16"}}},
  };
  double largest = 0;
  for (const Case& c : cases) {
    Trace trace(c.ranks);
    auto o = c.o;
    o.emplace("check", "off");
    const Report rep = dtl::test::run_for_results("grid", c.ranks, o, trace);
    const double worst = row(rep, "planner.model_state_worst");
    const double act = gap(rep, "planner.activation_bytes");
    const bool one_f_one_b = !c.o.count("schedule");
    std::string grid = "?";
    for (const std::string& line : rep.setup)
      if (line.rfind("DP(", 0) == 0) grid = line.substr(0, line.find(" ·"));
    std::printf("%s: model state worst rank/part off the planner %.0f B, rank 0 activations %.0f B%s\n", grid.c_str(),
                worst, act, one_f_one_b ? "" : " (GPipe: not compared)");
    EXPECT_EQ(worst, 0);
    EXPECT_EQ(gap(rep, "planner.param_bytes"), 0);
    EXPECT_EQ(gap(rep, "planner.grad_bytes"), 0);
    EXPECT_LT(gap(rep, "planner.optimizer_bytes"), 8);  // ZeRO-1's padding: under one element's m and v
    if (one_f_one_b)
      EXPECT_EQ(act, 0);
    else
      EXPECT_GT(act, 0);  // GPipe holds all M micro-batches, more than the planner's min(M, P)
    EXPECT_TRUE(rep.ok) << rep.to_text();
    largest = std::max({largest, worst, one_f_one_b ? act : 0.0});
  }
  std::printf("largest difference from the planner: %.0f B\n", largest);
}

TEST(GridPlanner, RankParametersAddUpToTheWholeModel) {
  // An independent count: with tp 1, the stages' Ψ_rank sum to L·(8h² + 5h), the MLP's blocks...
  GridSettings s;
  s.grid = {1, 1, 3};
  s.layers = 7, s.hidden = 48;
  double sum = 0;
  for (int stage = 0; stage < 3; ++stage) sum += grid_rank_params(s, stage);
  EXPECT_EQ(sum, 7.0 * (8 * 48 * 48 + 5 * 48));
  // ...and the GPT's to 12Lh² + 13Lh + Vh + sh + 2h (GPT-2's count with biases and layer norms,
  // the planner's 12·L·h² + V·h + s·h plus them) and one more wte for the head's copy.
  s.model = GridModelKind::gpt, s.vocab = 64, s.seq = 16;
  sum = 0;
  for (int stage = 0; stage < 3; ++stage) sum += grid_rank_params(s, stage);
  const double h = 48;
  EXPECT_EQ(sum, 7 * (12 * h * h + 13 * h) + 64 * h + 16 * h + 2 * h + 64 * h);
  // And the planner's model state in fp32 is 16 B per parameter without ZeRO.
  EXPECT_EQ(theory::rank_model_state(1000, 0, 4, {4, 4, 8}).model_state(), 16000);
  EXPECT_EQ(theory::rank_model_state(1000, 1, 4, {4, 4, 8}).optimizer, 2000);
}
