// One name, one meaning (issue 47): every lab's small run and a simulated trace, the figures
// the views draw read from the viz/model functions they draw from, against the report's rows
// of the same run.
//   - the pipeline view (pipeline and grid labs, simulate): each step's step time and bubble
//     (pipeline_step), aggregated as the lab aggregates its steps (labs/measure.h run_means,
//     then the median), equal to the report's "<schedule>.step_time" and ".bubble" rows up to
//     the trace's whole nanoseconds; the view labels its own figure as one step's;
//   - the memory view: each phase's per-rank peak (memory_by_phase, ZeRO's stages) equal to
//     the report's "zero<s>.peak_rank<r>" rows byte for byte; each rank's whole-run peak
//     (memory_at) at least every report row of a per-rank peak (a part of the run can not
//     peak above the whole), and equal to the largest of them where the lab reports the
//     whole run's peak ("memory_peak": DDP);
//   - the step idle (tests/viz/step_idle_test.cpp has the bubble rows against the timeline);
//   - where a replay opens (viz/model/opening.h): inside the timed step, on something to show.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "labs/lab.h"
#include "labs/measure.h"
#include "labs/pipeline/pipeline_lab.h"
#include "tests/cli/cli_util.h"
#include "viz/model/memory_model.h"
#include "viz/model/opening.h"
#include "viz/model/trace_data.h"
#include "viz/views/pipeline/pipeline_model.h"

using namespace dtl;
using namespace dtl::viz;

namespace {

using Rows = std::map<std::string, nlohmann::json>;

Rows report_rows(const TraceData& d) {
  Rows rows;
  const nlohmann::json report = nlohmann::json::parse(*d.meta_of(MetaKey::report));
  for (const nlohmann::json& row : report["rows"]) rows[row["id"].get<std::string>()] = row;
  return rows;
}

TraceData traced(const std::string& command) {
  const std::string trace = ::testing::TempDir() + "view_figures_" + std::to_string(::getpid()) + ".json";
  const test::CliOutput o = test::run_dtlab(command + " --trace " + trace);
  EXPECT_EQ(o.code, 0) << command << "\n" << o.err;
  TraceData d = load_trace(trace);
  std::remove(trace.c_str());
  std::remove((trace + ".dtlt").c_str());
  return d;
}

// The median of run means of per-step figures, as the lab aggregates them (`runs` from the
// row's spread: the steps split into that many consecutive runs).
double as_the_lab_aggregates(const std::vector<double>& per_step, const nlohmann::json& row) {
  const int runs = row.contains("spread") && row["spread"].is_object() ? row["spread"]["runs"].get<int>() : 1;
  if (per_step.empty() || runs <= 0) return -1;
  return repeated(run_means(per_step, int(per_step.size()) / runs)).median;
}

// The pipeline view's step time and bubble of every timed step against the report's rows;
// returns how many rows matched.
int check_pipeline_view(const std::string& name, const TraceData& d, const Rows& rows) {
  int compared = 0;
  for (const PipelineRun& run : pipeline_runs(d).runs) {
    std::vector<double> makespan, bubble;
    double longest = 0;
    for (const PipeStepRange& st : run.steps) {
      if (!st.complete) continue;
      const PipelineStep s = pipeline_step(d, run, st.step);
      longest = std::max(longest, s.makespan());
      if (st.step == 0) continue;  // a warm-up the labs do not time
      makespan.push_back(s.makespan()), bubble.push_back(s.bubble);
    }
    // The grid's and a simulation's step time hold more than the view's span (the DP
    // reduction, the optimizer): a different quantity, and the view names its own "first
    // action to last" (pipeline_view.cpp), never "step time".
    for (const char* id : {"grid.step_time", "sim.step"})
      if (const auto it = rows.find(id); it != rows.end()) {
        // Aggregated as the step time is (a simulation has one step: its span).
        const double theirs = it->second["measured"].get<double>();
        const double mine = makespan.empty() ? longest : as_the_lab_aggregates(makespan, it->second);
        std::printf(
            "%-10s %-22s view's first-action-to-last span %.6g s, report's step time %.6g s "
            "(a different quantity, named apart)\n",
            name.c_str(), id, mine, theirs);
        EXPECT_GT(mine, 0) << name;
        EXPECT_LE(mine, theirs * (1 + 1e-9)) << name << ": the span is part of the step";
        ++compared;
      }
    for (const auto& [metric, per_step] : {std::pair{"step_time", &makespan}, std::pair{"bubble", &bubble}}) {
      const auto it = rows.find(run.schedule + "." + metric);
      if (it == rows.end()) continue;
      const double mine = as_the_lab_aggregates(*per_step, it->second), theirs = it->second["measured"].get<double>();
      std::printf("%-10s %-22s view (%zu steps) %.9g, report %.9g, relative difference %.2g\n", name.c_str(),
                  it->first.c_str(), per_step->size(), mine, theirs, std::fabs(mine - theirs) / theirs);
      // The trace holds whole nanoseconds: a step of ~1 ms is read to 1e-6.
      EXPECT_NEAR(mine, theirs, 2e-5 * theirs) << name << " " << it->first;
      ++compared;
    }
  }
  return compared;
}

// The memory view's per-phase peaks (ZeRO) and whole-run peaks against the report's peak rows.
int check_memory_view(const std::string& name, const TraceData& d, const Rows& rows) {
  int compared = 0;
  for (const PhaseMemory& p : memory_by_phase(d).phases)
    for (std::size_t r = 0; r < p.peak.size(); ++r) {
      // The phase's role names the stage; its report case is "zero<stage>".
      if (p.role.zero_stage < 0) continue;
      const std::string id = "zero" + std::to_string(p.role.zero_stage) + ".peak_rank" + std::to_string(r);
      const auto it = rows.find(id);
      if (it == rows.end()) continue;
      std::printf("%-10s %-22s memory view's peak in %s %.0f B, report %.0f B\n", name.c_str(), id.c_str(),
                  p.label.c_str(), double(p.peak[r]), it->second["measured"].get<double>());
      EXPECT_EQ(double(p.peak[r]), it->second["measured"].get<double>()) << name << " " << id;
      ++compared;
    }
  const MemoryPicture whole = memory_at(d, std::numeric_limits<std::int64_t>::max());
  const std::uint64_t most = whole.peak.empty() ? 0 : *std::max_element(whole.peak.begin(), whole.peak.end());
  for (const auto& [id, row] : rows) {
    const std::string metric = id.substr(id.find('.') + 1);
    const bool per_rank_peak = metric == "memory_peak" || metric.starts_with("peak_rank");
    if (!per_rank_peak || row["unit"] != "B") continue;
    const double theirs = row["measured"].get<double>();
    std::printf("%-10s %-22s memory view's largest whole-run peak %.0f B, report %.0f B\n", name.c_str(), id.c_str(),
                double(most), theirs);
    EXPECT_GE(double(most), theirs) << name << " " << id << ": a part of the run peaks above the whole";
    if (metric == "memory_peak") { EXPECT_EQ(double(most), theirs) << name << " " << id; }
    ++compared;
  }
  return compared;
}

// A useful first picture (viz/model/opening.h): the opening cursor's time lies in the timed
// step, every rank's memory bars there are not empty, and the pipeline view's step holds it
// after its first backward began.
void check_opening(const LabInfo& lab, const TraceData& d) {
  TraceIndex x;
  const ViewKind main = lab.views.front();
  x = index_trace(d, lab.step_unit);
  const std::size_t cursor = opening_cursor(d, x, main);
  ASSERT_TRUE(x.first_step.has_value()) << lab.name;
  ASSERT_GT(cursor, 0u) << lab.name << ": opens before the run's first " << step_unit_noun(x.unit);
  const std::int64_t t = x.steps()[cursor - 1].end_ns;  // Frame::cursor_time
  std::printf("%-17s main view %-10s opens at %s %zu of %zu, %.3f ms into the timed step\n", lab.name.c_str(),
              std::string(view_kind_name(main)).c_str(), step_unit_noun(x.unit), cursor, x.steps().size(),
              1e-6 * double(t - x.first_step->begin));
  // Inside the step wherever a step lands in it (the GPT's few all-reduces may not: then the
  // last one before its end, the state the step starts from).
  const bool any_inside = std::any_of(x.steps().begin(), x.steps().end(), [&](const Event& e) {
    return e.end_ns >= x.first_step->begin && e.end_ns <= x.first_step->end;
  });
  if (any_inside) {
    EXPECT_GE(t, x.first_step->begin) << lab.name;
    EXPECT_LE(t, x.first_step->end) << lab.name << ": the cursor is past the timed step";
  } else if (x.steps().front().end_ns <= x.first_step->end) {
    EXPECT_LT(t, x.first_step->begin) << lab.name;
    EXPECT_TRUE(cursor == x.steps().size() || x.steps()[cursor].end_ns > x.first_step->end) << lab.name;
  } else {  // every step lands after it: the first
    EXPECT_EQ(cursor, 1u) << lab.name;
  }
  if (!d.memory.empty()) {
    const MemoryPicture pic = memory_at(d, t);
    for (const MemorySample& m : pic.now)
      EXPECT_GT(std::accumulate(m.bytes.begin(), m.bytes.end(), std::uint64_t(0)), 0u)
          << lab.name << ": rank " << m.rank << "'s memory bar is empty at the opening";
  }
  if (main == kPipelineView) {
    const PipelineRuns runs = pipeline_runs(d);
    ASSERT_FALSE(runs.runs.empty()) << lab.name;
    EXPECT_GE(pipeline_step_at(runs.runs.front(), t), 1) << lab.name << ": the pipeline view opens on no timed step";
    bool backward_begun = false;
    for (const Event& e : d.events)
      backward_begun = backward_begun || (e.kind == EventKind::compute && d.role(e).pass == Pass::backward &&
                                          e.begin_ns >= x.first_step->begin && e.begin_ns <= t);
    EXPECT_TRUE(backward_begun) << lab.name << ": the pipeline view opens before the step's first backward";
  }
}

std::string small_run(const LabInfo& lab) {
  std::string args = "run " + lab.name;
  for (const auto& [flag, value] : lab.small_run) args += " --" + flag + " " + value;
  return args;
}

}  // namespace

TEST(ViewFigures, EveryLabsViewsShowTheReportsStepTimeBubbleAndMemory) {
  int pipeline_rows = 0, memory_rows = 0;
  for (const LabInfo& lab : lab_registry()) {
    const TraceData d = traced(small_run(lab));
    const Rows rows = report_rows(d);
    // (the pipeline view's: a DDP or ZeRO phase of F/B spans is no pipeline)
    if (std::find(lab.views.begin(), lab.views.end(), kPipelineView) != lab.views.end())
      pipeline_rows += check_pipeline_view(lab.name, d, rows);
    memory_rows += check_memory_view(lab.name, d, rows);
    check_opening(lab, d);
  }
  EXPECT_GE(pipeline_rows, 3) << "the pipeline lab's step time and bubble, the grid's step time";
  EXPECT_GE(memory_rows, 2 * 4 * 2 + 1) << "ZeRO's per-rank peaks of 4 stages on 2 ranks, twice; DDP's";
}

TEST(ViewFigures, ASimulatedTracesPipelineViewNamesItsSpanApartFromTheStepTime) {
  const TraceData d =
      traced("simulate --model 7b --cluster a100-80gb --gpus 16 --dp 2 --tp 2 --pp 4 --micro-batches 8");
  EXPECT_EQ(check_pipeline_view("simulate", d, report_rows(d)), 1);
}
