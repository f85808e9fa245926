// `dtlab simulate` as a user runs it: a report marked simulated with its calibration error,
// a trace of the chosen ranks in the event schema, and bad input → exit 2 naming the rule.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/cli/cli_util.h"

using dtl::test::run_dtlab;

TEST(SimulateCli, SmallClusterPrintsASimulatedReportAndWritesATrace) {
  const std::string path = testing::TempDir() + "/sim_small.json";
  const auto o = run_dtlab("simulate --model 7b --dp 2 --tp 4 --pp 2 --micro-batches 8 --trace " + path + " --json");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["lab"], "simulate");
  bool step = false;
  for (const auto& row : j["rows"]) step = step || (row["id"] == "sim.step" && row["measured"].get<double>() > 0);
  EXPECT_TRUE(step) << o.out;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const auto trace = nlohmann::json::parse(text.str());
  EXPECT_EQ(trace["otherData"]["simulated"], "true");
  EXPECT_EQ(trace["otherData"]["world_size"], "16");  // 16 GPUs: every rank traced
  EXPECT_NE(text.str().find("all_reduce activations"), std::string::npos);
  std::remove(path.c_str());
  std::remove((path + ".dtlt").c_str());
}

TEST(SimulateCli, TextReportSaysSimulatedAndTheCalibrationError) {
  const auto o = run_dtlab("simulate --model 175b --gpus 16384 --dp 128 --tp 8 --pp 16 --micro-batches 64");
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* want : {"simulated", "distinct timelines", "calibration", "step time", "tokens/s", "MFU"})
    EXPECT_NE(o.out.find(want), std::string::npos) << want << " missing:\n" << o.out;
}

TEST(SimulateCli, BadInputIsExitTwoNamingTheRule) {
  const auto ghost = run_dtlab("simulate --model 7b --dp 2 --tp 4 --pp 2 --ranks-in-trace 0,16 --trace /dev/null");
  EXPECT_EQ(ghost.code, 2) << ghost.out;
  EXPECT_NE(ghost.err.find("rank 16 does not exist"), std::string::npos) << ghost.err;
  for (const char* args : {"simulate --model 175b --gpus 256 --dp 3 --tp 8 --pp 4",
                           "simulate --model 7b --dp 1 --pp 8 --micro-batches 4", "simulate --params 7e9 --dp 2",
                           "simulate --model 175b --gpus 16384 --dp 128 --tp 8 --pp 16 --ranks-in-trace all"}) {
    const auto bad = run_dtlab(args);
    EXPECT_EQ(bad.code, 2) << args << "\n" << bad.err;
  }
}

TEST(SimulateCli, CalibrateOptionsNeedCalibrateAndCalibrateTakesNoOtherOptions) {
  for (const char* args :
       {"simulate --calibrate-repeat 3", "simulate --calibrate-link nvlink4",
        "simulate --model 7b --calibrate-compute-us 5", "simulate --calibrate-compute-from same-run",
        "simulate --calibrate --model 175b", "simulate --calibrate --trace /dev/null",
        "simulate --calibrate --calibrate-repeat 2 --dp 2", "simulate --calibrate --schedule gpipe"}) {
    const auto bad = run_dtlab(args);  // exits before any grid run
    EXPECT_EQ(bad.code, 2) << args << "\n" << bad.out << bad.err;
  }
}

// `simulate --cp`: the ring's exposed hops are on the timeline (a row beside the plan's, spans
// in the trace with their bytes), each GPU computes s/cp positions, the ranks carry their cp
// coordinate, and the dp collectives run over dp·cp.
TEST(SimulateCli, ContextParallelismPutsTheRingOnTheTimeline) {
  const std::string path = testing::TempDir() + "/sim_cp.json";
  const auto base = run_dtlab("simulate --model 7b --dp 2 --tp 4 --pp 2 --micro-batches 8 --json");
  const auto o =
      run_dtlab("simulate --model 7b --dp 2 --tp 4 --pp 2 --cp 2 --micro-batches 8 --trace " + path + " --json");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(base.code, 0) << base.err;
  auto row = [](const std::string& text, const char* id) {
    const auto j = nlohmann::json::parse(text);  // (kept: the rows are a reference into it)
    for (const auto& r : j["rows"])
      if (r["id"] == id) return r["measured"].get<double>();
    return -1.0;
  };
  EXPECT_GE(row(o.out, "sim.cp"), 0) << o.out;
  EXPECT_EQ(row(base.out, "sim.cp"), -1.0) << "no cp row without --cp";
  // Half the positions per GPU: each GPU's compute is about half (the attention blocks are s/cp wide).
  EXPECT_LT(row(o.out, "sim.compute"), 0.6 * row(base.out, "sim.compute"));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const auto trace = nlohmann::json::parse(text.str());
  EXPECT_EQ(trace["otherData"]["world_size"], "32");
  EXPECT_NE(text.str().find("ring K/V hops (exposed)"), std::string::npos);
  EXPECT_NE(text.str().find("\\\"cp\\\":1"), std::string::npos) << "the simulated ranks' cp coordinates";
  EXPECT_NE(o.out.find("dp·cp: 4 ranks"), std::string::npos) << o.out;
  std::remove(path.c_str());
  std::remove((path + ".dtlt").c_str());
}
