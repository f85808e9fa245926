// One definition of idle (issue 47): the timeline's idle over a step (viz/model/step_idle.h,
// the function its "idle in view" calls) for every lab's small run and a simulated trace.
//   - it is the definition: equal to the plain pass idle_fraction (no compute on the rank)
//     averaged over ranks, the reference BusyIndex is tested against;
//   - where the report has a step's idle share (the pipeline's and the grid's bubble, a
//     simulation's), the timeline's figure aggregated as the report aggregates (the median
//     of run means) is that figure less the other compute inside the steps (an optimizer
//     step of a stage done early: the timeline counts it as work, a bubble does not), which
//     this test measures with its own plain pass; what is left is the trace's rounding to
//     whole nanoseconds (below 1e-4 of a step of about a millisecond). Elsewhere the report
//     has no row of that name, so no figure is shown twice with two meanings.
#include "viz/model/step_idle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "labs/lab.h"
#include "tests/cli/cli_util.h"
#include "viz/model/trace_data.h"

using namespace dtl;
using namespace dtl::viz;

namespace {

std::string small_run_args(const LabInfo& lab) {
  std::map<std::string, std::string> flags = lab.small_run;
  std::string args;
  for (const auto& [flag, value] : flags) args += " --" + flag + " " + value;
  return args;
}

// The report's rows whose id ends with ".bubble", the step's idle share.
std::vector<nlohmann::json> bubble_rows(const TraceData& d) {
  std::vector<nlohmann::json> rows;
  const nlohmann::json r = nlohmann::json::parse(*d.meta_of(MetaKey::report));
  for (const nlohmann::json& row : r["rows"])
    if (row["id"].get<std::string>().ends_with(".bubble")) rows.push_back(row);
  return rows;
}

// Idle over `w` counting only step `step`'s actions (forward, backward, W spans) as work:
// what a lab's bubble counts (an independent plain pass over the trace).
double actions_only_idle(const TraceData& d, const TraceIndex& x, int step, TimeRange w) {
  double idle = 0;
  for (int r = 0; r < d.ranks; ++r) {
    std::vector<std::pair<std::int64_t, std::int64_t>> spans;
    for (const Event& e : d.events) {
      const Pass p = d.role(e).pass;
      if (e.rank == r && e.step == step && e.kind == EventKind::compute &&
          (p == Pass::forward || p == Pass::backward || p == Pass::weight) && e.end_ns > w.begin &&
          e.begin_ns < w.end && x.timed && e.begin_ns >= x.timed->begin &&
          e.begin_ns < x.timed->end)  // (not the 1-rank reference's)
        spans.push_back({std::max(e.begin_ns, w.begin), std::min(e.end_ns, w.end)});
    }
    std::sort(spans.begin(), spans.end());
    std::int64_t covered = 0, reach = w.begin;
    for (const auto& [b, e] : spans)
      covered += std::max<std::int64_t>(0, e - std::max(b, reach)), reach = std::max(reach, e);
    idle += 1 - double(covered) / double(w.end - w.begin);
  }
  return idle / d.ranks;
}

// The step idle against its definition, and against the report's bubble rows; returns how
// many rows were compared.
int check_trace(const std::string& name, const TraceData& d) {
  const TraceIndex x = index_trace(d);
  const std::vector<StepIdle> steps = step_idle(d, x);
  std::vector<StepIdle> actions = steps;
  double worst = 0, worst_actions = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    double plain = 0;
    for (int r = 0; r < d.ranks; ++r) plain += idle_fraction(d, r, steps[i].window.begin, steps[i].window.end);
    worst = std::max(worst, std::fabs(steps[i].idle - plain / d.ranks));
    actions[i].idle = actions_only_idle(d, x, steps[i].step, steps[i].window);
    worst_actions = std::max(worst_actions, std::fabs(steps[i].actions_idle - actions[i].idle));
  }
  EXPECT_LT(worst, 1e-12) << name << ": the timeline's idle is not its definition";
  EXPECT_LT(worst_actions, 1e-12) << name << ": the model's actions-only idle is not the plain pass's";
  int compared = 0;
  for (const nlohmann::json& row : bubble_rows(d)) {
    EXPECT_FALSE(steps.empty()) << name << ": a bubble row, but no steps on the timeline";
    if (steps.empty()) continue;
    const int runs = row.contains("spread") ? row["spread"]["runs"].get<int>() : 1;
    const double scale = row["unit"] == "%" ? 100 : 1, mine = median_of_run_means(steps, runs);
    const double only = median_of_run_means(actions, runs), theirs = row["measured"].get<double>() / scale;
    std::printf(
        "%-17s %s (%s): timeline %.4f, actions only %.4f, report %.4f; other compute in the steps %.4f, "
        "left %+.4f\n",
        name.c_str(), row["id"].get<std::string>().c_str(), figure_kind(d), mine, only, theirs, only - mine,
        only - theirs);
    // The timeline counts every compute span as work, the bubble only the actions: that
    // (the optimizer of a stage done early) is the whole difference, up to the clocks'.
    EXPECT_LE(mine, only + 1e-12) << name;
    EXPECT_NEAR(only, theirs, 1e-4) << name << " " << row["id"];
    ++compared;
  }
  if (compared == 0) {  // then no row may be called idle: the timeline's idle is the only figure of that name
    std::printf("%-17s no bubble row; timeline idle over %zu steps\n", name.c_str(), steps.size());
    const nlohmann::json r = nlohmann::json::parse(*d.meta_of(MetaKey::report));
    for (const nlohmann::json& row : r["rows"])
      EXPECT_EQ(row["label"].get<std::string>().find("idle"), std::string::npos)
          << name << ": " << row["id"] << " is called idle but is not compared with the timeline's";
  }
  return compared;
}

}  // namespace

TEST(StepIdle, EveryLabsSmallRunAgreesWithItsReport) {
  const std::string trace = ::testing::TempDir() + "step_idle_" + std::to_string(::getpid()) + ".json";
  int compared = 0;
  for (const LabInfo& lab : lab_registry()) {
    const test::CliOutput o = test::run_dtlab("run " + lab.name + small_run_args(lab) + " --trace " + trace);
    ASSERT_EQ(o.code, 0) << lab.name << "\n" << o.err;
    const TraceData d = load_trace(trace);
    EXPECT_STREQ(figure_kind(d), "measured") << lab.name;
    compared += check_trace(lab.name, d);
  }
  EXPECT_GE(compared, 2) << "the pipeline's and the grid's reports have a bubble row to compare with";
  std::remove(trace.c_str());
  std::remove((trace + ".dtlt").c_str());
}

TEST(StepIdle, ASimulatedTraceAgreesWithItsReportAndSaysSimulated) {
  const std::string trace = ::testing::TempDir() + "step_idle_sim_" + std::to_string(::getpid()) + ".json";
  const test::CliOutput o = test::run_dtlab(
      "simulate --model 7b --cluster a100-80gb --gpus 16 --dp 2 --tp 2 --pp 4 --micro-batches 8 --trace " + trace);
  ASSERT_EQ(o.code, 0) << o.err;
  const TraceData d = load_trace(trace);
  EXPECT_STREQ(figure_kind(d), "simulated");
  EXPECT_EQ(check_trace("simulate", d), 1);
  EXPECT_NE(describe_step_idle(d, index_trace(d)).find("simulated"), std::string::npos);
  std::remove(trace.c_str());
  std::remove((trace + ".dtlt").c_str());
}
