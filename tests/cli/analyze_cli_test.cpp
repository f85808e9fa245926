// `dtlab analyze` on real PyTorch DDP runs (gloo, CPU) recorded at test time by
// tests/python/record_ddp_traces.py, whose exposed communication is built in: rank 1 sleeps
// kSleepMs in each step's compute, so every other rank waits that long in the gradients'
// all-reduce. Checked with 2 and 4 processes, with and without record_function("train_step")
// and ProfilerStep#N spans (containers the analysis must not count as compute). Skipped,
// saying why, without a python3 that imports torch. Plus the refusals of bad input (exit 2).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_util.h"
#include "tests/python_torch.h"

namespace {

constexpr double kSleepMs = 250;  // large beside the ranks' compute (a few ms a step), which varies with the load
constexpr int kSteps = 3, kSlowRank = 1;

struct Recorded {
  std::string dir, skip;  // skip: why there is no recording
};

Recorded record(int ranks, bool annotated) {
  const std::string python = dtl::test::python_with_torch();
  if (python.empty()) return {"", dtl::test::kNoTorchReason};
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("dtl_analyze_" + std::to_string(ranks) + (annotated ? "a_" : "p_") + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(dir);
  const std::string cmd = "timeout 120 " + python + " -W ignore " + DTL_SOURCE_DIR +
                          "/tests/python/record_ddp_traces.py --ranks " + std::to_string(ranks) + " --steps " +
                          std::to_string(kSteps) + " --slow-rank " + std::to_string(kSlowRank) + " --sleep-ms " +
                          std::to_string(int(kSleepMs)) + (annotated ? " --annotate --profiler-steps" : "") +
                          " --out " + dir;
  const dtl::test::CommandResult r = dtl::test::run_command(cmd);
  if (r.code == 77) return {"", "the recorder skipped: " + r.output};
  EXPECT_EQ(r.code, 0) << cmd << "\n" << r.output;
  return {dir, ""};
}

// The wait built in, kSleepMs per step, against what dtlab analyze measured.
void check_run(int ranks, bool annotated) {
  const Recorded rec = record(ranks, annotated);
  if (!rec.skip.empty()) GTEST_SKIP() << rec.skip;
  const dtl::test::CliOutput o = dtl::test::run_dtlab("analyze " + rec.dir + " --json");
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["ranks"].size(), std::size_t(ranks));
  EXPECT_EQ(j["slowest_rank"], kSlowRank);
  const double built_in = kSleepMs * kSteps;
  const nlohmann::json& slow = j["ranks"][kSlowRank];
  double worst = 0;  // the largest relative difference
  for (const nlohmann::json& r : j["ranks"]) {
    if (r["rank"] == kSlowRank) continue;
    // What the peer waited for the slow rank, and its exposed communication beyond the
    // slow rank's own (the transfer both see), are the sleep.
    const double waited = r["waited_ms"],
                 extra_exposed = double(r["exposed_communication_ms"]) - double(slow["exposed_communication_ms"]);
    for (double measured : {waited, extra_exposed}) {
      worst = std::max(worst, std::fabs(measured - built_in) / built_in);
      EXPECT_NEAR(measured, built_in, 0.1 * built_in) << "rank " << r["rank"] << ": " << o.out;
    }
  }
  // The slow rank's sleep runs no operator: idle, not compute, though train_step holds it.
  EXPECT_GE(double(slow["idle_ms"]), 0.9 * built_in) << o.out;
  std::printf("%d ranks%s: built-in exposed communication %.0f ms, largest difference %.1f%%\n", ranks,
              annotated ? " (annotated)" : "", built_in, 100 * worst);
  std::filesystem::remove_all(rec.dir);
}

TEST(AnalyzeCli, TwoRanksFindTheBuiltInWait) { check_run(2, false); }
TEST(AnalyzeCli, TwoRanksAnnotatedFindTheBuiltInWait) { check_run(2, true); }
TEST(AnalyzeCli, FourRanksFindTheBuiltInWait) { check_run(4, false); }
TEST(AnalyzeCli, FourRanksAnnotatedFindTheBuiltInWait) { check_run(4, true); }

TEST(AnalyzeCli, BadInputExitsTwoSayingWhatToDo) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dtl_analyze_bad_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string legacy0 =
      "[{\"name\": \"gloo:all_reduce\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2, \"tid\": 2, "
      "\"pid\": \"CPU functions\"}]";
  const std::string kineto =
      "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 0, \"world_size\": 4}, "
      "\"traceEvents\": []}";
  std::ofstream(dir / "rank0.json") << legacy0;
  std::ofstream(dir / "rank1.json") << "[]";  // no collective: not the same steps of one run
  std::ofstream(dir / "dtlab.json") << "{\"otherData\": {}, \"traceEvents\": []}";
  std::ofstream(dir / "of_four.json") << kineto;
  const struct {
    std::string args, says;
  } cases[] = {
      {(dir / "missing.json").string(), "does not exist"},
      {(dir / "dtlab.json").string(), "not a torch.profiler trace"},
      {(dir / "rank0.json").string() + " " + (dir / "rank1.json").string(), "not the same steps"},
      {(dir / "of_four.json").string(), "pass all 4"},
      {(dir / "rank0.json").string(), "one rank of a run of several"},
      {"", "traces is required"},
  };
  const std::string fifo = (dir / "fifo.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // would block a reader forever
  const dtl::test::CliOutput piped =
      dtl::test::run_dtlab_shell("timeout 20 " + std::string(DTLAB_EXE) + " analyze " + fifo);
  EXPECT_EQ(piped.code, 2) << piped.err;
  for (const auto& c : cases) {
    const dtl::test::CliOutput o = dtl::test::run_dtlab("analyze " + c.args);
    EXPECT_EQ(o.code, 2) << c.args << ": " << o.err;
    EXPECT_NE(o.err.find(c.says), std::string::npos) << c.args << ": " << o.err;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
