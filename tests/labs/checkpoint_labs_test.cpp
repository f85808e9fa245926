// Sharded checkpoints of the tensor_parallel, grid and experts labs on thread ranks
// (labs/train/checkpoint_tensors.h): saved on one layout, resumed on the same layout (the final
// checkpoint equals the uninterrupted run's bit for bit: the same reduction order) and on others
// (tensor_parallel T = 2 → 4 and → 1; grid dp2×tp2×pp1 → dp1×tp2×pp2, ZeRO-1 over dp 4 → tp2×pp2,
// 8 ranks → 3; the tensor_parallel lab's checkpoint resumed by the grid; experts over 4 ranks → 2
// and → 1: within the lab's fp32 tolerance, the largest difference printed); a fault injected at
// a collective, then --resume, reaches the uninterrupted run's final state bit for bit; a fault
// at any collective of a run that saves every step (inside a save too) leaves the newest
// complete checkpoint loadable and any unfinished one refused (the context_parallel lab's faults
// counted at its library collectives, and a full disk under a file-size limit). The GPT (gpt lab,
// tensor_parallel --model gpt, context_parallel): T or CP = 2 → 2, 4 and 1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/trace/trace.h"
#include "labs/train/checkpoint_sharded.h"
#include "labs/train/checkpoint_tensors.h"
#include "tests/labs/checkpoint_test_util.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;
namespace fs = std::filesystem;

namespace {

using Options = std::map<std::string, std::string>;

const Options kTpBase = {{"layers", "2"}, {"hidden", "16"}, {"seq", "8"}, {"batch", "2"}, {"steps", "4"}};
const Options kGridBase = {{"layers", "3"}, {"hidden", "16"}, {"seq", "8"},
                           {"batch", "4"},  {"steps", "4"},   {"micro-batches", "4"}};
// No capacity and no load-balancing loss: the routing groups (one per rank) change nothing but
// the summation order, so a run resumed on another EP can match.
const Options kExpertsBase = {{"layers", "1"},  {"hidden", "16"}, {"ffn", "32"},       {"experts", "4"},
                              {"tokens", "32"}, {"steps", "4"},   {"overflow", "pad"}, {"aux-weight", "0"}};

// The gpt lab's tiny GPT on dtlab's docs (its character vocabulary), T = --ranks.
const Options kGptBase = {{"layers", "1"}, {"hidden", "16"}, {"heads", "4"},     {"seq", "8"},
                          {"batch", "2"},  {"steps", "4"},   {"eval-every", "2"}};

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(testing::TempDir()) / ("dtl_lab_ckpt_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

// `counted`: what the fault plan counts (the lab's --inject-fault unit unless given); `report`: rank 0's.
RunResult run_lab(const std::string& name, int P, const Options& base, const Options& extra, FaultPlan faults = {},
                  std::optional<StepUnit> counted = std::nullopt, Report* report = nullptr) {
  Options options = base;
  for (const auto& [k, v] : extra) options[k] = v;
  const LabInfo* lab = find_lab(name);
  LabConfig cfg;
  cfg.ranks = P;
  cfg.options = options;
  cfg = with_defaults(*lab, cfg);
  Trace trace(P);
  faults.counted = counted.value_or(lab->step_unit);  // what --inject-fault counts in this lab
  return run_threads({.world_size = P, .trace = &trace, .faults = faults}, [&](Comm& c) {
    Report r = lab->run(c, cfg);
    if (c.rank() == 0 && report) *report = r;
  });
}

double largest_difference(const std::string& a_dir, const std::string& b_dir) {
  return test::largest_checkpoint_difference(a_dir, b_dir);
}

// `lab` resumed from `from` on P ranks with `layout`, to the last step (4): its final checkpoint
// against `reference`'s, the largest difference.
double resumed_difference(const std::string& lab, int P, const Options& base, Options layout, const std::string& from,
                          const std::string& reference, const std::string& name) {
  const std::string dir = fresh_dir(name);
  layout.insert({{"resume", from}, {"checkpoint-every", "4"}, {"checkpoint-dir", dir}});
  const RunResult r = run_lab(lab, P, base, layout);
  EXPECT_TRUE(r.ok()) << name << ": " << r.error;
  if (!r.ok()) return INFINITY;
  const double diff = largest_difference(reference + "/step-000004", dir + "/step-000004");
  std::printf("%s: largest difference from the uninterrupted run %g\n", name.c_str(), diff);
  return diff;
}

// The library collectives (or the context-parallel ring's transfers: LabInfo::step_unit) rank 1 makes in a run that
// saves every step: a fault past them never fires, and the run says how many there were.
int collectives_of(const std::string& lab, int P, const Options& base, Options layout,
                   std::optional<StepUnit> counted = std::nullopt) {
  layout.insert({{"checkpoint-every", "1"}, {"checkpoint-dir", fresh_dir("count")}});
  try {
    run_lab(lab, P, base, layout, {.fault_rank = 1, .fault_step = 1 << 30}, counted);
  } catch (const UsageError& e) {
    int made = 0;
    const std::string what = e.what();
    const std::size_t at = what.find("rank 1 made ");
    if (at != std::string::npos && std::sscanf(what.c_str() + at, "rank 1 made %d", &made) == 1) return made;
    ADD_FAILURE() << what;
  }
  ADD_FAILURE() << lab << ": the fault past the run's end did not say how many collectives it made";
  return 0;
}

// Rank 1 fails at its collective k of a run that saves every step: k = 5/8 of the run's, then 2/3
// of that until the fault comes before the last step's save (the gpt lab's sampling after training
// makes most of its collectives); then --resume (same layout) ends with `reference`'s final state
// bit for bit.
void fault_then_resume(const std::string& lab, int P, const Options& base, const Options& layout,
                       const std::string& reference, const std::string& name) {
  const std::string dir = fresh_dir(name);
  Options saving = layout;
  saving.insert({{"checkpoint-every", "1"}, {"checkpoint-dir", dir}});
  int k = collectives_of(lab, P, base, layout) * 5 / 8, at = k, saved = 4;
  for (; saved == 4 && k > 0; k = k * 2 / 3) {
    fs::remove_all(dir);
    at = k;
    const RunResult failed = run_lab(lab, P, base, saving, {.fault_rank = 1, .fault_step = k});
    ASSERT_FALSE(failed.ok()) << name << ": the fault at collective " << k << " came after the run's end";
    EXPECT_NE(failed.error.find("injected fault"), std::string::npos) << failed.error;
    saved = read_manifest(resolve_checkpoint(dir)).position.step;  // UsageError (a failure) if none
  }
  ASSERT_LT(saved, 4);
  const double diff = resumed_difference(lab, P, base, layout, dir, reference, name + "_resumed");
  std::printf("%s: fault at rank 1's event %d (the lab's --inject-fault unit), resumed from step %d\n", name.c_str(),
              at, saved);
  EXPECT_EQ(diff, 0);
}

// A fault at each of rank 1's collectives 1, 1 + stride, ... of a run saving every step: the
// newest complete checkpoint (if any) verifies, and each unfinished one is refused by name. Up to
// `limit` (the gpt lab's training, not the sampling after it).
void faults_anywhere_leave_the_last_checkpoint(const std::string& lab, int P, const Options& base,
                                               const Options& layout, int stride, const std::string& name,
                                               int limit = 1 << 30, std::optional<StepUnit> counted = std::nullopt) {
  int partials = 0, runs = 0;
  const int total = collectives_of(lab, P, base, layout, counted);
  for (int k = 1; k < std::min(total, limit); k += stride) {  // (a STEP below the count fires)
    const std::string dir = fresh_dir(name + std::to_string(k));
    Options saving = layout;
    saving.insert({{"checkpoint-every", "1"}, {"checkpoint-dir", dir}});
    EXPECT_FALSE(run_lab(lab, P, base, saving, {.fault_rank = 1, .fault_step = k}, counted).ok());
    ++runs;
    std::vector<std::string> skipped;  // "step-000003.partial: why"
    try {
      verify_checkpoint(read_manifest(resolve_checkpoint(dir, &skipped)));
    } catch (const UsageError& e) {  // the fault came before the first save finished
      const std::string what = e.what();
      EXPECT_TRUE(what.find("no complete checkpoint") != std::string::npos ||
                  what.find("no such checkpoint folder") != std::string::npos)
          << what;
    }
    for (const std::string& s : skipped) {
      const std::string folder = dir + "/" + s.substr(0, s.find(':'));
      ++partials;
      try {
        resolve_checkpoint(folder);
        ADD_FAILURE() << folder << ": an unfinished save was not refused";
      } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("did not finish"), std::string::npos) << e.what();
      }
    }
  }
  std::printf("%s: %d runs failed at one of rank 1's %d counted events, %d unfinished saves left and refused\n",
              name.c_str(), runs, total, partials);
  EXPECT_GT(runs, 2);
  EXPECT_GT(partials, 0);  // some fault fell inside a save
}

}  // namespace

// A row-parallel block (columns 1..2 of every row of a [3 × 4] tensor) is a piece per row at the
// row's offset, a column-parallel one (rows 1..2, every column) one piece; a replica none.
TEST(HeldTensors, PiecesAreTheBlocksRunsInTheFlattenedTensor) {
  HeldTensor columns{"w", {3, 4}, 0, 3, 1, 3, 0}, rows{"w2", {3, 4}, 1, 3, 0, 4, 6};
  HeldTensor replica = whole_tensor("b", {4}, 14);
  replica.saves = false;
  HeldState st{std::vector<float>(18), std::vector<float>(18), std::vector<float>(18)};
  for (std::size_t i = 0; i < 18; ++i) st.params[i] = float(i);
  const StagedPieces staged = stage_held_tensors({columns, rows, replica}, st);
  std::vector<std::string> got;
  for (const PieceView& p : staged.pieces)
    if (p.tensor == "w" || p.tensor == "w2")  // the parameters' pieces (m and v repeat them)
      got.push_back(p.tensor + "[" + std::to_string(p.begin) + "," + std::to_string(p.end) +
                    ")=" + std::to_string(int(static_cast<const float*>(p.data)[0])));
  const std::vector<std::string> want = {"w[1,3)=0", "w[5,7)=2", "w[9,11)=4", "w2[4,12)=6"};
  EXPECT_EQ(got, want);
  EXPECT_EQ(staged.pieces.size(), 3 * want.size());  // and adam.m., adam.v. of each; none of the replica
}

TEST(TensorParallelCheckpoint, ResumedOnTwoFourAndOneRanks) {
  const std::string a = fresh_dir("tp_a");
  ASSERT_TRUE(run_lab("tensor_parallel", 2, kTpBase, {{"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  const std::string from = a + "/step-000002";
  EXPECT_EQ(resumed_difference("tensor_parallel", 2, kTpBase, {}, from, a, "tp2_to_tp2"), 0);
  EXPECT_LT(resumed_difference("tensor_parallel", 4, kTpBase, {}, from, a, "tp2_to_tp4"), 1e-5);
  EXPECT_LT(resumed_difference("tensor_parallel", 1, kTpBase, {}, from, a, "tp2_to_tp1"), 1e-5);
  EXPECT_LT(resumed_difference("tensor_parallel", 2, kTpBase, {{"sequence-parallel", "on"}}, from, a, "tp2_to_tp2sp"),
            1e-5);
  fault_then_resume("tensor_parallel", 2, kTpBase, {}, a, "tp_fault");
  test::expect_usage_error("tensor_parallel", 2, {{"sequence-parallel", "both"}, {"resume", a}}, "not both");
  const RunResult gpt = run_lab("tensor_parallel", 2, kTpBase, {{"model", "gpt"}, {"resume", from}});
  EXPECT_NE(gpt.error.find("another model or task"), std::string::npos) << gpt.error;
  const RunResult other = run_lab("tensor_parallel", 2, kTpBase, {{"batch", "4"}, {"resume", from}});
  EXPECT_NE(other.error.find("another --batch"), std::string::npos) << other.error;
  const RunResult wider = run_lab("tensor_parallel", 2, kTpBase, {{"hidden", "32"}, {"resume", from}});
  EXPECT_NE(wider.error.find("h.0.mlp.c_fc.weight"), std::string::npos) << wider.error;
}

TEST(GridCheckpoint, ResumedOnOtherGridsAndFromTheTensorParallelLab) {
  const std::string a = fresh_dir("grid_a");
  const Options dp2tp2 = {{"dp", "2"}, {"tp", "2"}, {"pp", "1"}};
  Options saving = dp2tp2;
  saving.insert({{"checkpoint-every", "1"}, {"checkpoint-dir", a}});
  ASSERT_TRUE(run_lab("grid", 4, kGridBase, saving).ok());
  const std::string from = a + "/step-000002";
  EXPECT_EQ(resumed_difference("grid", 4, kGridBase, dp2tp2, from, a, "grid_same"), 0);
  EXPECT_LT(
      resumed_difference("grid", 4, kGridBase, {{"dp", "1"}, {"tp", "2"}, {"pp", "2"}}, from, a, "grid_to_tp2pp2"),
      1e-5);
  EXPECT_LT(resumed_difference("grid", 3, kGridBase, {{"dp", "1"}, {"tp", "1"}, {"pp", "3"}}, from, a, "grid_to_pp3"),
            1e-5);
  fault_then_resume("grid", 4, kGridBase, dp2tp2, a, "grid_fault");
}

TEST(GridCheckpoint, ZeroOverFourRanksToTp2Pp2AndEightRanksToThree) {
  const std::string z = fresh_dir("grid_zero"), e = fresh_dir("grid_eight");
  ASSERT_TRUE(
      run_lab("grid", 4, kGridBase,
              {{"dp", "4"}, {"tp", "1"}, {"pp", "1"}, {"zero", "1"}, {"checkpoint-every", "1"}, {"checkpoint-dir", z}})
          .ok());
  EXPECT_LT(resumed_difference("grid", 4, kGridBase, {{"dp", "1"}, {"tp", "2"}, {"pp", "2"}}, z + "/step-000002", z,
                               "zero1_dp4_to_tp2pp2"),
            1e-5);
  EXPECT_EQ(resumed_difference("grid", 4, kGridBase, {{"dp", "4"}, {"tp", "1"}, {"pp", "1"}, {"zero", "1"}},
                               z + "/step-000003", z, "zero1_dp4_same"),
            0);
  ASSERT_TRUE(
      run_lab("grid", 8, kGridBase,
              {{"dp", "2"}, {"tp", "2"}, {"pp", "2"}, {"zero", "1"}, {"checkpoint-every", "1"}, {"checkpoint-dir", e}})
          .ok());
  EXPECT_LT(resumed_difference("grid", 3, kGridBase, {{"dp", "1"}, {"tp", "1"}, {"pp", "3"}}, e + "/step-000001", e,
                               "grid_8_to_3"),
            1e-5);
}

// The example: the zero lab's ZeRO-3 over 4 ranks, continued on a tp 2 × pp 2 grid. The
// grid's --mlp-form stack is the zero lab's MLP (--width 64 = its 64-wide input and output,
// --depth 4 = 2 blocks of 2 layers) on its teacher data (G = --batch 32 × --seq 1 rows a step)
// with its AdamW; zero's 6 steps are 1 warm-up + 5 runs (LabConfig::repeat) of 1. Within the lab's fp32 tolerance
// (the sums in another order); a grid of another width is refused, naming the tensor.
TEST(GridCheckpoint, TheZeroLabsStage3OnFourRanksContinuedOnTp2Pp2) {
  const Options zero = {{"stage", "3"},        {"width", "64"}, {"depth", "4"},
                        {"precision", "fp32"}, {"batch", "32"}, {"steps", "1"}};
  const Options stack = {{"mlp-form", "stack"}, {"hidden", "64"}, {"layers", "2"},       {"batch", "32"},
                         {"seq", "1"},          {"steps", "6"},   {"micro-batches", "4"}};
  const std::string z = fresh_dir("zero3_for_grid");
  ASSERT_TRUE(run_lab("zero", 4, zero, {{"checkpoint-every", "1"}, {"checkpoint-dir", z}}).ok());
  const Options tp2pp2 = {{"dp", "1"}, {"tp", "2"}, {"pp", "2"}};
  const std::string g = fresh_dir("grid_from_zero3");
  Report rep;
  const RunResult r = run_lab("grid", 4, stack,
                              {{"dp", "1"},
                               {"tp", "2"},
                               {"pp", "2"},
                               {"resume", z + "/step-000002"},
                               {"checkpoint-every", "6"},
                               {"checkpoint-dir", g}},
                              {}, {}, &rep);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(rep.ok);  // its own checks: against one rank resumed from the same checkpoint
  const double diff = largest_difference(z + "/step-000006", g + "/step-000006");
  std::printf(
      "zero stage 3 on 4 ranks, saved at step 2, continued on grid tp2×pp2 to step 6: largest difference "
      "from zero's uninterrupted run %g\n",
      diff);
  EXPECT_LT(diff, 1e-5);
  EXPECT_LT(resumed_difference("grid", 2, stack, {{"dp", "1"}, {"tp", "1"}, {"pp", "2"}}, z + "/step-000003", z,
                               "zero3_to_grid_pp2"),
            1e-5);
  Options wider = tp2pp2;
  wider.insert({{"hidden", "32"}, {"resume", z + "/step-000002"}});
  const RunResult refused = run_lab("grid", 4, stack, wider);
  EXPECT_NE(refused.error.find("tensor 'params'"), std::string::npos) << refused.error;
  Options blocks = tp2pp2;
  blocks.insert({{"mlp-form", "blocks"}, {"resume", z + "/step-000002"}});
  const RunResult other = run_lab("grid", 4, stack, blocks);
  EXPECT_NE(other.error.find("resume it with --mlp-form stack"), std::string::npos) << other.error;
}

// The other way: the grid's stack on tp 2 × pp 2 saves step 2, the zero lab (stage 3, 4 ranks)
// continues it to step 6 and ends on the grid's uninterrupted weights and moments.
TEST(GridCheckpoint, TheZeroLabContinuesTheGridsStackFromTp2Pp2) {
  const Options stack = {{"mlp-form", "stack"}, {"hidden", "64"}, {"layers", "2"},       {"batch", "32"},
                         {"seq", "1"},          {"steps", "6"},   {"micro-batches", "4"}};
  const std::string g = fresh_dir("grid_stack_for_zero");
  ASSERT_TRUE(run_lab("grid", 4, stack,
                      {{"dp", "1"}, {"tp", "2"}, {"pp", "2"}, {"checkpoint-every", "1"}, {"checkpoint-dir", g}})
                  .ok());
  const Options zero = {{"stage", "3"},        {"width", "64"}, {"depth", "4"},
                        {"precision", "fp32"}, {"batch", "32"}, {"steps", "1"}};
  const std::string z = fresh_dir("zero3_from_grid");
  const RunResult r =
      run_lab("zero", 4, zero, {{"resume", g + "/step-000002"}, {"checkpoint-every", "6"}, {"checkpoint-dir", z}});
  ASSERT_TRUE(r.ok()) << r.error;
  const double diff = largest_difference(g + "/step-000006", z + "/step-000006");
  std::printf(
      "grid stack tp2×pp2 saved at step 2, continued by zero stage 3 on 4 ranks to step 6: largest difference "
      "from the grid's uninterrupted run %g\n",
      diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(GridCheckpoint, ResumesTheTensorParallelLabsCheckpoint) {
  const std::string a = fresh_dir("tp_for_grid");
  // The same MLP and task: --layers 3, --hidden 16, B·S = 32 rows a step.
  Options tp = kGridBase;
  tp.erase("micro-batches");
  ASSERT_TRUE(run_lab("tensor_parallel", 2, tp, {{"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  EXPECT_LT(resumed_difference("grid", 4, kGridBase, {{"dp", "1"}, {"tp", "2"}, {"pp", "2"}}, a + "/step-000002", a,
                               "tp_lab_to_grid"),
            1e-5);
}

TEST(GridCheckpoint, TheGptResumedOnAnotherGridAndFromTheTensorParallelLab) {
  const Options gpt = {{"model", "gpt"}, {"layers", "2"}, {"hidden", "16"}, {"heads", "4"},        {"seq", "8"},
                       {"batch", "4"},   {"vocab", "16"}, {"steps", "4"},   {"micro-batches", "2"}};
  const std::string a = fresh_dir("grid_gpt_a"), t = fresh_dir("grid_gpt_tp");
  const Options dp2tp2 = {{"dp", "2"}, {"tp", "2"}, {"pp", "1"}};
  Options saving = dp2tp2;
  saving.insert({{"checkpoint-every", "1"}, {"checkpoint-dir", a}});
  ASSERT_TRUE(run_lab("grid", 4, gpt, saving).ok());
  const std::string from = a + "/step-000002";
  EXPECT_EQ(resumed_difference("grid", 4, gpt, dp2tp2, from, a, "grid_gpt_same"), 0);
  const double bound = 0.02 * 1e-3 * 2;  // the lab's: 0.02·lr per step, 2 steps resumed
  EXPECT_LT(resumed_difference("grid", 4, gpt, {{"dp", "1"}, {"tp", "2"}, {"pp", "2"}}, from, a, "grid_gpt_to_tp2pp2"),
            bound);
  EXPECT_LT(resumed_difference("grid", 2, gpt, {{"dp", "1"}, {"tp", "1"}, {"pp", "2"}, {"zero", "0"}}, from, a,
                               "grid_gpt_to_pp2"),
            bound);
  fault_then_resume("grid", 4, gpt, dp2tp2, a, "grid_gpt_fault");
  // The tensor_parallel lab's GPT, the same model and task (and AdamW): resumed as a 2-stage grid.
  Options tp = gpt;
  tp.erase("micro-batches");
  ASSERT_TRUE(run_lab("tensor_parallel", 2, tp, {{"checkpoint-every", "1"}, {"checkpoint-dir", t}}).ok());
  EXPECT_LT(resumed_difference("grid", 4, gpt, {{"dp", "1"}, {"tp", "2"}, {"pp", "2"}}, t + "/step-000002", t,
                               "tp_gpt_to_grid_gpt"),
            bound);
}

TEST(ExpertsCheckpoint, ResumedOnFourTwoAndOneRanks) {  // the MoE blocks (--model mlp)
  const std::string a = fresh_dir("moe_a");
  ASSERT_TRUE(run_lab("experts", 4, kExpertsBase, {{"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  const std::string from = a + "/step-000002";
  EXPECT_EQ(resumed_difference("experts", 4, kExpertsBase, {}, from, a, "experts_4_to_4"), 0);
  EXPECT_LT(resumed_difference("experts", 2, kExpertsBase, {}, from, a, "experts_4_to_2"), 1e-5);
  EXPECT_LT(resumed_difference("experts", 1, kExpertsBase, {}, from, a, "experts_4_to_1"), 1e-5);
  fault_then_resume("experts", 4, kExpertsBase, {}, a, "experts_fault");
  const RunResult more = run_lab("experts", 4, kExpertsBase, {{"experts", "8"}, {"resume", from}});
  EXPECT_NE(more.error.find("tensor 'block 0 router'"), std::string::npos) << more.error;
}

TEST(ExpertsCheckpoint, TheGptWithExpertsResumedOnFourAndTwoRanks) {
  const Options gpt = {{"model", "gpt"}, {"layers", "1"}, {"hidden", "16"},    {"ffn", "32"},
                       {"experts", "4"}, {"seq", "8"},    {"batch", "4"},      {"vocab", "16"},
                       {"heads", "4"},   {"steps", "4"},  {"overflow", "pad"}, {"aux-weight", "0"}};
  const std::string a = fresh_dir("moe_gpt_a");
  ASSERT_TRUE(run_lab("experts", 4, gpt, {{"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  const std::string from = a + "/step-000002";
  EXPECT_EQ(resumed_difference("experts", 4, gpt, {}, from, a, "experts_gpt_4_to_4"), 0);
  EXPECT_LT(resumed_difference("experts", 2, gpt, {}, from, a, "experts_gpt_4_to_2"), 0.02 * 1e-3 * 2);
}

TEST(GptCheckpoint, ResumedOnTwoAndOneRanks) {
  const std::string a = fresh_dir("gpt_a");
  ASSERT_TRUE(run_lab("gpt", 2, kGptBase, {{"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  const std::string from = a + "/step-000002";
  EXPECT_EQ(resumed_difference("gpt", 2, kGptBase, {}, from, a, "gpt_2_to_2"), 0);
  // AdamW (eps 1e-5) turns fp32 sum-order differences of near-zero gradients into larger steps:
  // the lab's bound, 0.02·lr per step (lr 3e-3, 2 steps resumed).
  EXPECT_LT(resumed_difference("gpt", 1, kGptBase, {}, from, a, "gpt_2_to_1"), 0.02 * 3e-3 * 2);
  fault_then_resume("gpt", 2, kGptBase, {}, a, "gpt_fault");
  RunResult r = run_lab("gpt", 2, kGptBase, {{"precision", "bf16"}, {"resume", a}});
  EXPECT_NE(r.error.find("fp32 only"), std::string::npos) << r.error;
  r = run_lab("gpt", 2, kGptBase, {{"load", a}, {"resume", a}});
  EXPECT_NE(r.error.find("give one of them"), std::string::npos) << r.error;
}

// The GPT of the tensor_parallel lab (--model gpt) and of the context_parallel lab: the same
// model (seed 7) on the same counting task.
const Options kTpGptBase = {{"model", "gpt"}, {"layers", "1"}, {"hidden", "16"}, {"heads", "4"},
                            {"seq", "16"},    {"batch", "2"},  {"vocab", "16"},  {"steps", "4"}};
const Options kCpBase = {{"layers", "1"}, {"hidden", "16"}, {"heads", "4"}, {"seq", "16"},
                         {"batch", "2"},  {"vocab", "16"},  {"steps", "4"}};

TEST(TensorParallelCheckpoint, TheGptResumedOnTwoFourAndOneRanks) {
  const std::string a = fresh_dir("tp_gpt_a");
  ASSERT_TRUE(run_lab("tensor_parallel", 2, kTpGptBase, {{"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  const std::string from = a + "/step-000002";
  EXPECT_EQ(resumed_difference("tensor_parallel", 2, kTpGptBase, {}, from, a, "tp_gpt_2_to_2"), 0);
  const double bound = 0.02 * 1e-3 * 2;  // the lab's: 0.02·lr per step, 2 steps resumed
  EXPECT_LT(resumed_difference("tensor_parallel", 4, kTpGptBase, {}, from, a, "tp_gpt_2_to_4"), bound);
  EXPECT_LT(resumed_difference("tensor_parallel", 1, kTpGptBase, {}, from, a, "tp_gpt_2_to_1"), bound);
  fault_then_resume("tensor_parallel", 2, kTpGptBase, {}, a, "tp_gpt_fault");
}

TEST(ContextParallelCheckpoint, ResumedOnTwoFourAndOneRanksAndFromTheTensorParallelLab) {
  const std::string a = fresh_dir("cp_a"), tp = fresh_dir("cp_from_tp");
  ASSERT_TRUE(run_lab("context_parallel", 2, kCpBase, {{"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  const std::string from = a + "/step-000002";
  EXPECT_EQ(resumed_difference("context_parallel", 2, kCpBase, {}, from, a, "cp_2_to_2"), 0);
  const double bound = 0.02 * 1e-3 * 2;
  EXPECT_LT(resumed_difference("context_parallel", 4, kCpBase, {}, from, a, "cp_2_to_4"), bound);
  EXPECT_LT(resumed_difference("context_parallel", 1, kCpBase, {}, from, a, "cp_2_to_1"), bound);
  EXPECT_LT(resumed_difference("context_parallel", 2, kCpBase, {{"algo", "ulysses"}}, from, a, "cp_ring_to_ulysses"),
            bound);
  fault_then_resume("context_parallel", 2, kCpBase, {}, a, "cp_fault");
  // The tensor_parallel lab's GPT (its AdamW's eps differs: the runs continue differently).
  ASSERT_TRUE(run_lab("tensor_parallel", 2, kTpGptBase, {{"checkpoint-every", "2"}, {"checkpoint-dir", tp}}).ok());
  const RunResult resumed = run_lab("context_parallel", 2, kCpBase, {{"resume", tp + "/step-000002"}});
  EXPECT_TRUE(resumed.ok()) << resumed.error;
  test::expect_usage_error("context_parallel", 2, {{"algo", "all"}, {"resume", a}}, "give one --algo");
}

TEST(LabCheckpoint, AFaultAnywhereLeavesTheLastCheckpointLoadable) {
  faults_anywhere_leave_the_last_checkpoint("tensor_parallel", 2, kTpBase, {}, 3, "tp_any");
  faults_anywhere_leave_the_last_checkpoint("grid", 2, kGridBase, {{"dp", "1"}, {"tp", "1"}, {"pp", "2"}}, 3,
                                            "grid_any");
  faults_anywhere_leave_the_last_checkpoint("experts", 2, kExpertsBase, {}, 3, "experts_any");
  // The gpt lab: its training's first 160 collectives (sampling after it makes 500 more).
  faults_anywhere_leave_the_last_checkpoint("gpt", 2, kGptBase, {}, 5, "gpt_any", 160);
}

// The context_parallel lab's --inject-fault counts the ring's transfers, and no save makes one:
// here the fault counts library collectives instead, the saves' own (the staging size, the
// barrier that carries failures, the times), so some faults fall between the pieces being
// written and the manifest. Then a full disk: a file-size limit (as `ulimit -f` sets) under
// which every save of a resumed run fails; the checkpoint before it stays the newest, loads, and
// the report names the checkpoints not saved.
TEST(ContextParallelCheckpoint, AFaultInASaveOrAFullDiskLeavesTheLastCheckpointLoadable) {
  faults_anywhere_leave_the_last_checkpoint("context_parallel", 2, kCpBase, {}, 2, "cp_any", 1 << 30,
                                            StepUnit::collectives);
  const std::string dir = fresh_dir("cp_full");
  Options first = kCpBase;
  first["steps"] = "2";
  ASSERT_TRUE(run_lab("context_parallel", 2, first, {{"checkpoint-every", "2"}, {"checkpoint-dir", dir}}).ok());
  Report full;
  RunResult r;
  {
    const dtl::test::FileSizeLimit full_disk(512);  // every write past 512 bytes fails with EFBIG
    r = run_lab("context_parallel", 2, kCpBase, {{"resume", dir}, {"checkpoint-every", "1"}, {"checkpoint-dir", dir}},
                {}, {}, &full);
  }
  ASSERT_TRUE(r.ok()) << r.error;  // the run trains on; its report fails
  EXPECT_FALSE(full.ok);
  ASSERT_FALSE(full.failures.empty());
  EXPECT_NE(full.failures[0].find("not saved"), std::string::npos) << full.failures[0];
  std::printf("full disk: %s\n", full.failures[0].c_str());
  std::vector<std::string> skipped;
  const std::string newest = resolve_checkpoint(dir, &skipped);
  EXPECT_EQ(fs::path(newest).filename(), "step-000002");
  EXPECT_TRUE(skipped.empty());  // the failed saves' folders removed
  EXPECT_FALSE(fs::exists(dir + "/step-000003.partial"));
  verify_checkpoint(read_manifest(newest));
  const RunResult again = run_lab("context_parallel", 2, kCpBase, {{"resume", dir}});
  EXPECT_TRUE(again.ok()) << again.error;
}
