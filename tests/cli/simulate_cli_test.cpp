// `dtlab simulate` as a user runs it: a report marked simulated with its calibration error,
// a trace of the chosen ranks in the event schema, and bad input → exit 2 naming the rule.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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

// --checkpoint-every K: after every K-th step each traced rank writes for δ = the checkpoint's size
// over the aggregate bandwidth (twice the bandwidth, half the δ), and the next step starts δ later.
TEST(SimulateCli, CheckpointsBetweenStepsInTheReportAndTheTrace) {
  const std::string path = testing::TempDir() + "/sim_checkpoints.json";
  auto rows = [](const std::string& out) {
    std::map<std::string, double> r;
    const auto report = nlohmann::json::parse(out);  // (kept: the loop below reads into it)
    for (const auto& row : report["rows"])
      if (row["measured"].is_number()) r[row["id"].get<std::string>()] = row["measured"].get<double>();
    return r;
  };
  const std::string base = "simulate --model 7b --dp 2 --tp 2 --pp 2 --micro-batches 4 --checkpoint-every 2 --json";
  const auto o = run_dtlab(base + " --steps 5 --checkpoint-write-gbps 40 --trace " + path);
  const auto faster = run_dtlab(base + " --checkpoint-write-gbps 80");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(faster.code, 0) << faster.err;
  auto r = rows(o.out);
  const double step = r["sim.step"], write_s = r["sim.checkpoint_write"];
  std::printf("checkpoint %.4g GB, δ %.6f s at 40 GB/s, %.6f s at 80; step %.6f s\n", r["sim.checkpoint_size"], write_s,
              rows(faster.out)["sim.checkpoint_write"], step);
  EXPECT_NEAR(write_s, r["sim.checkpoint_size"] / 40, 1e-9 * write_s);
  EXPECT_NEAR(rows(faster.out)["sim.checkpoint_write"], write_s / 2, 1e-9 * write_s);
  EXPECT_NEAR(r["sim.step_with_checkpoints"], step + write_s / 2, 1e-9 * step);
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::vector<double> saves, starts;  // rank 0's, in µs
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("pid", -1) != 0 || e.value("ph", "") != "X") continue;
    if (e.value("name", "") == "checkpoint save (synchronous)") saves.push_back(e["dur"].get<double>());
    if (e.value("cat", "") == "phase") starts.push_back(e["ts"].get<double>());
  }
  ASSERT_EQ(saves.size(), 2u) << "5 steps, a save after steps 2 and 4";
  ASSERT_EQ(starts.size(), 5u);
  for (double d : saves) EXPECT_NEAR(d, write_s * 1e6, 1.0);
  EXPECT_NEAR(starts[1] - starts[0], step * 1e6, 1.0);              // no save after step 1
  EXPECT_NEAR(starts[2] - starts[1], (step + write_s) * 1e6, 1.0);  // the save after step 2
  std::remove(path.c_str());
  std::remove((path + ".dtlt").c_str());
}
