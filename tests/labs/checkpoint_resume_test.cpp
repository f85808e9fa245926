// The ZeRO and DDP labs' checkpoints on thread ranks: a run resumed from its own checkpoint ends with
// the uninterrupted run's final state bit for bit (same ranks, same stage: the same reduction
// order); resumed on other rank counts and stages (4 → 2, 4 → 3, stage 2 → 1 and 3) within the
// lab's fp32 tolerance; a fault mid-run, then --resume, reaches the same final state bit for
// bit; asynchronous saves equal synchronous ones; DDP resumes its own checkpoint bit for bit and ZeRO resumes DDP's;
// broken checkpoints and options without effect are usage errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/trace/trace.h"
#include "labs/train/checkpoint_sharded.h"
#include "tests/labs/checkpoint_test_util.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;
namespace fs = std::filesystem;

namespace {

using Options = std::map<std::string, std::string>;

// 1 warm-up + 2 × 2 steps = 5 steps; fp32 so that resharded runs differ by summation order only.
const Options kBase = {{"width", "32"}, {"depth", "3"}, {"batch", "24"}, {"steps", "2"}, {"precision", "fp32"}};

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(testing::TempDir()) / ("dtl_zero_ckpt_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

// Lab `name` on P thread ranks with `faults`; the run's result (its error, if any).
RunResult run_training(const std::string& name, int P, Options extra, FaultPlan faults = {}) {
  Options options = kBase;
  for (auto& [k, v] : extra) options[k] = v;
  if (name == "pipeline") options.erase("precision");  // fp32 only, as the base
  const LabInfo* lab = find_lab(name);
  LabConfig cfg;
  cfg.ranks = P;
  cfg.repeat = 2;
  cfg.options = options;
  cfg = with_defaults(*lab, cfg);
  Trace trace(P);
  faults.counted = StepUnit::collectives;
  return run_threads({.world_size = P, .trace = &trace, .faults = faults}, [&](Comm& c) { lab->run(c, cfg); });
}
RunResult run_zero(int P, Options extra, FaultPlan faults = {}) { return run_training("zero", P, extra, faults); }

double largest_difference(const std::string& a_dir, const std::string& b_dir) {
  return test::largest_checkpoint_difference(a_dir, b_dir);
}

}  // namespace

TEST(ZeroCheckpoint, ResumedOnTheSameLayoutIsBitForBit) {
  const std::string a = fresh_dir("same_a"), b = fresh_dir("same_b");
  ASSERT_TRUE(run_zero(4, {{"stage", "2"}, {"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  const RunResult resumed =
      run_zero(4, {{"stage", "2"}, {"resume", a + "/step-000002"}, {"checkpoint-every", "5"}, {"checkpoint-dir", b}});
  ASSERT_TRUE(resumed.ok()) << resumed.error;
  const double diff = largest_difference(a + "/step-000005", b + "/step-000005");
  std::printf("stage 2, 4 ranks, resumed at step 2: largest difference from the uninterrupted run %g\n", diff);
  EXPECT_EQ(diff, 0);
  // Asynchronous saves write from a host staging copy while the next step changes the model:
  // every checkpoint equals the synchronous run's, bit for bit.
  const std::string c = fresh_dir("same_async");
  ASSERT_TRUE(
      run_zero(4, {{"stage", "2"}, {"checkpoint-every", "1"}, {"checkpoint-dir", c}, {"checkpoint-async", "on"}}).ok());
  for (int step = 1; step <= 5; ++step) {
    const std::string name = "/step-00000" + std::to_string(step);
    const double step_diff = largest_difference(a + name, c + name);
    std::printf("step %d saved asynchronously: largest difference from the synchronous save %g\n", step, step_diff);
    EXPECT_EQ(step_diff, 0);
  }
  test::expect_usage_error("zero", 2, {{"stage", "1"}, {"checkpoint-async", "on"}}, "--checkpoint-async");
}

TEST(ZeroCheckpoint, ResumedOnOtherRankCountsAndStagesWithinTolerance) {
  const std::string a = fresh_dir("reshard_a");
  ASSERT_TRUE(run_zero(4, {{"stage", "2"}, {"checkpoint-every", "1"}, {"checkpoint-dir", a}}).ok());
  for (const auto& [P, stage] : {std::pair{2, "1"}, std::pair{3, "3"}, std::pair{1, "0"}}) {
    const std::string b = fresh_dir(std::string("reshard_b") + stage);
    const RunResult resumed = run_zero(
        P, {{"stage", stage}, {"resume", a + "/step-000003"}, {"checkpoint-every", "5"}, {"checkpoint-dir", b}});
    ASSERT_TRUE(resumed.ok()) << resumed.error;
    const double diff = largest_difference(a + "/step-000005", b + "/step-000005");
    std::printf("saved by stage 2 on 4 ranks, resumed by stage %s on %d: largest difference %g\n", stage, P, diff);
    EXPECT_LT(diff, 1e-5);  // the lab's fp32 tolerance (summation order)
  }
}

TEST(ZeroCheckpoint, FaultThenResumeReachesTheSameWeights) {
  const std::string clean = fresh_dir("fault_clean"), faulty = fresh_dir("fault_run");
  ASSERT_TRUE(run_zero(4, {{"stage", "3"}, {"checkpoint-every", "5"}, {"checkpoint-dir", clean}}).ok());
  // Rank 1 fails at its 60th collective: after step 2's checkpoint, before the run's end.
  const RunResult failed = run_zero(4, {{"stage", "3"}, {"checkpoint-every", "2"}, {"checkpoint-dir", faulty}},
                                    {.fault_rank = 1, .fault_step = 60});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error.find("injected fault"), std::string::npos) << failed.error;
  const std::string last = resolve_checkpoint(faulty);
  const int saved = read_manifest(last).position.step;
  std::printf("fault: %s; newest checkpoint %s\n", failed.error.c_str(), last.c_str());
  ASSERT_TRUE(saved == 2 || saved == 4) << last;
  const RunResult resumed =
      run_zero(4, {{"stage", "3"}, {"resume", faulty}, {"checkpoint-every", "5"}, {"checkpoint-dir", faulty}});
  ASSERT_TRUE(resumed.ok()) << resumed.error;
  const double diff = largest_difference(clean + "/step-000005", faulty + "/step-000005");
  std::printf("resumed at step %d after the fault: largest difference %g\n", saved, diff);
  EXPECT_EQ(diff, 0);
}

TEST(ZeroCheckpoint, BrokenCheckpointsAndOptionsWithoutEffectAreRefused) {
  const std::string a = fresh_dir("refuse");
  ASSERT_TRUE(run_zero(2, {{"stage", "1"}, {"checkpoint-every", "2"}, {"checkpoint-dir", a}}).ok());
  fs::resize_file(a + "/step-000004/rank-00000-of-00002.safetensors", 100);
  RunResult r = run_zero(2, {{"stage", "1"}, {"resume", a + "/step-000004"}});
  EXPECT_NE(r.error.find("refused: piece"), std::string::npos) << r.error;
  r = run_zero(2, {{"stage", "1"}, {"width", "33"}, {"resume", a + "/step-000002"}});
  EXPECT_NE(r.error.find("tensor 'params'"), std::string::npos) << r.error;
  r = run_zero(2, {{"stage", "1"}, {"batch", "12"}, {"resume", a + "/step-000002"}});
  EXPECT_NE(r.error.find("another --batch"), std::string::npos) << r.error;
  test::expect_usage_error("zero", 2, {{"checkpoint-every", "2"}}, "give both");
  test::expect_usage_error("zero", 2, {{"checkpoint-dir", a}}, "give both");
  test::expect_usage_error("zero", 2, {{"stage", "all"}, {"resume", a}}, "give --stage 0, 1, 2 or 3");
  test::expect_usage_error("zero", 2, {{"stage", "1"}, {"precision", "fp16"}, {"resume", a}}, "loss scale");
}

TEST(DdpCheckpoint, ResumedBitForBitAndByZero) {
  const std::string a = fresh_dir("ddp_a"), b = fresh_dir("ddp_b"), c = fresh_dir("ddp_c");
  const Options bucketed = {{"variant", "bucketed"}, {"checkpoint-every", "1"}, {"checkpoint-dir", a}};
  ASSERT_TRUE(run_training("ddp", 4, bucketed).ok());
  const RunResult resumed = run_training(
      "ddp", 4,
      {{"variant", "bucketed"}, {"resume", a + "/step-000002"}, {"checkpoint-every", "5"}, {"checkpoint-dir", b}});
  ASSERT_TRUE(resumed.ok()) << resumed.error;
  double diff = largest_difference(a + "/step-000005", b + "/step-000005");
  std::printf("ddp bucketed, 4 ranks, resumed at step 2: largest difference %g\n", diff);
  EXPECT_EQ(diff, 0);
  const RunResult by_zero =
      run_zero(2, {{"stage", "3"}, {"resume", a + "/step-000002"}, {"checkpoint-every", "5"}, {"checkpoint-dir", c}});
  ASSERT_TRUE(by_zero.ok()) << by_zero.error;
  diff = largest_difference(a + "/step-000005", c + "/step-000005");
  std::printf("saved by ddp on 4 ranks, resumed by zero stage 3 on 2: largest difference %g\n", diff);
  EXPECT_LT(diff, 1e-5);
  test::expect_usage_error("ddp", 2, {{"variant", "all"}, {"resume", a}}, "give one --variant");
}

TEST(PipelineCheckpoint, ResumesZeroAndItsOwnOnOtherStageCounts) {
  const std::string z = fresh_dir("pipe_z"), p = fresh_dir("pipe_p"), q = fresh_dir("pipe_q"), r = fresh_dir("pipe_r");
  const Options deep = {{"depth", "4"}, {"checkpoint-every", "1"}};
  Options zero = deep, gpipe = deep;
  zero.insert({{"stage", "3"}, {"checkpoint-dir", z}});
  gpipe.insert({{"schedule", "gpipe"}, {"checkpoint-dir", p}});
  ASSERT_TRUE(run_zero(4, zero).ok());
  ASSERT_TRUE(run_training("pipeline", 2, gpipe).ok());
  const RunResult from_zero = run_training("pipeline", 2,
                                           {{"depth", "4"},
                                            {"schedule", "1f1b"},
                                            {"resume", z + "/step-000002"},
                                            {"checkpoint-every", "5"},
                                            {"checkpoint-dir", q}});
  ASSERT_TRUE(from_zero.ok()) << from_zero.error;
  double diff = largest_difference(z + "/step-000005", q + "/step-000005");
  std::printf("saved by zero stage 3 on 4 ranks, resumed by a 2-stage 1F1B pipeline: largest difference %g\n", diff);
  EXPECT_LT(diff, 1e-5);
  const RunResult four = run_training("pipeline", 4,
                                      {{"depth", "4"},
                                       {"schedule", "1f1b"},
                                       {"resume", p + "/step-000003"},
                                       {"checkpoint-every", "5"},
                                       {"checkpoint-dir", r}});
  ASSERT_TRUE(four.ok()) << four.error;
  diff = largest_difference(p + "/step-000005", r + "/step-000005");
  std::printf("saved by a 2-stage GPipe, resumed by a 4-stage 1F1B: largest difference %g\n", diff);
  EXPECT_LT(diff, 1e-5);
  test::expect_usage_error("pipeline", 2, {{"schedule", "all"}, {"resume", p}}, "give one --schedule");
}
