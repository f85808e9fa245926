// Live panels fill as the run goes (issue 27, item 3): what is being stepped is drawn
// before its span ends. A ZeRO run's stage in progress has its memory bars mid-run (it read
// "ZeRO-0 (not in the trace) peak 0 B" until the stage ended); a tensor-parallel run's
// steps start where the ranks train, not inside the 1-rank reference (whose collectives on a
// group of one moved nothing, and whose memory is not the ranks'), so its memory view has
// bars after the first steps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "core/comm/threads_backend.h"
#include "core/trace/chrome_writer.h"
#include "labs/grid/grid_lab.h"
#include "labs/lab.h"
#include "tests/viz/headless_imgui.h"
#include "viz/model/memory_model.h"
#include "viz/model/report_plots.h"
#include "viz/model/trace_data.h"
#include "viz/views/grid/topology_view.h"

using namespace dtl;

namespace {

// Steps a live run `steps` times (each step waits until the released one is recorded).
void step(viz::App& app, viz::testing::HeadlessImGui& gui, std::size_t steps) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (app.controls.cursor < steps && !app.session->finished() && std::chrono::steady_clock::now() < deadline) {
    if (app.session->can_advance() || app.controls.cursor < app.session->steps().size()) app.StepOne();
    gui.frame(app);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  while (app.session->steps().size() < app.controls.cursor && !app.session->finished() &&
         std::chrono::steady_clock::now() < deadline) {  // the released step lands
    gui.frame(app);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::unique_ptr<viz::Session> live(const char* lab, int ranks, const std::map<std::string, std::string>& options) {
  LabConfig cfg;
  cfg.ranks = ranks;
  for (const auto& [k, v] : options) cfg.options.set(k, v);
  return viz::Session::live(*find_lab(lab), cfg);
}

}  // namespace

TEST(LivePanels, AZeroStageInProgressHasItsMemoryBars) {
  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(live("zero", 2, {{"stage", "all"}}));
  step(app, gui, 6);
  ASSERT_FALSE(app.session->finished()) << "the test wants the run mid-way";
  const viz::PhaseMemories phases = viz::memory_by_phase(app.session->data());
  int in_progress = 0;
  for (const viz::PhaseMemory& p : phases.phases) {
    if (!p.in_progress) continue;
    ++in_progress;
    ASSERT_EQ(p.peak.size(), 2u);
    for (std::size_t r = 0; r < 2; ++r) EXPECT_GT(p.peak[r], 0u) << p.label << ", rank " << r << ": empty bars mid-run";
    std::printf("mid-run: %s in progress, peaks %.1f and %.1f KiB (formula %.1f KiB)\n", p.label.c_str(),
                double(p.peak[0]) / 1024, double(p.peak[1]) / 1024, p.formula / 1024);
  }
  EXPECT_EQ(in_progress, 1) << "one stage is being stepped";
}

TEST(LivePanels, TensorParallelStepsBeginWhereTheRanksTrain) {
  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(live("tensor_parallel", 2, {}));
  step(app, gui, 2);
  ASSERT_FALSE(app.session->finished());
  const viz::TraceData& d = app.session->data();
  ASSERT_FALSE(app.session->steps().empty());
  for (const Event& s : app.session->steps())  // every step after its rank's reference phase
    for (const Event& e : d.events) {
      if (e.kind == EventKind::phase && e.rank == s.rank && d.role(e).part == RunPart::reference) {
        EXPECT_GE(s.begin_ns, e.end_ns) << "a step inside rank " << s.rank << "'s 1-rank reference";
      }
    }
  std::size_t samples_of[2] = {0, 0};
  for (const viz::MemorySample& m : d.memory)
    if (m.rank >= 0 && m.rank < 2) ++samples_of[m.rank];
  EXPECT_GT(samples_of[0], 0u) << "rank 0's memory while it trains with rank 1";
  EXPECT_GT(samples_of[1], 0u) << "rank 1's memory";
}

// The GPT's loss curve grows as the run goes (it appeared only with the report, at the end).
TEST(LivePanels, TheGptLossCurveGrowsMidRun) {
  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(live("gpt", 2, {{"steps", "60"}}));
  step(app, gui, 300);
  ASSERT_FALSE(app.session->finished()) << "the test wants the run mid-way";
  const std::string* live_plots = app.session->data().meta_of(MetaKey::live_plots);
  ASSERT_NE(live_plots, nullptr) << "no curve mid-run";
  const viz::ReportPlots plots = viz::parse_report_plots(nlohmann::json::parse(*live_plots));
  ASSERT_EQ(plots.plots.size(), 2u);
  const std::size_t points = plots.plots[0].x.size();
  std::printf("mid-run: the training loss has %zu of 60 points, last %.3f\n", points, plots.plots[0].y.back());
  EXPECT_GT(points, 0u);
  EXPECT_LT(points, 60u);
  EXPECT_EQ(plots.plots[0].x.back(), double(points)) << "step k's loss at x = k";
}

// The grid's topology view lights the group of the collective at the cursor (item 8), the
// ranks worked out here from Megatron's layout rank = pp·(dp·tp) + dp·tp + tp.
TEST(LivePanels, TheTopologyLightsTheCollectiveAtTheCursor) {
  constexpr int DP = 2, TP = 2, PP = 2;
  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(live("grid", DP * TP * PP, {{"dp", "2"}, {"tp", "2"}, {"pp", "2"}}));
  auto* view = dynamic_cast<viz::TopologyView*>(app.panel(kTopologyView));
  ASSERT_NE(view, nullptr);
  std::map<GroupAxis, int> seen;
  for (std::size_t k = 1; k <= 80 && !app.session->finished(); ++k) {
    step(app, gui, k);
    gui.frame(app);
    if (app.controls.cursor == 0 || app.controls.cursor > app.session->steps().size()) continue;
    const Event& e = app.session->steps()[app.controls.cursor - 1];
    const int pp = e.rank / (DP * TP), dp = e.rank % (DP * TP) / TP, tp = e.rank % TP;
    std::vector<int> want;
    for (int a = 0; a < 2; ++a) {
      if (e.axis == GroupAxis::tp) want.push_back(pp * DP * TP + dp * TP + a);
      if (e.axis == GroupAxis::dp) want.push_back(pp * DP * TP + a * TP + tp);
      if (e.axis == GroupAxis::pp) want.push_back(a * DP * TP + dp * TP + tp);
    }
    if (e.axis == GroupAxis::none)
      for (int r = 0; r < DP * TP * PP; ++r) want.push_back(r);
    EXPECT_EQ(view->stepped_group, want) << "collective " << app.controls.cursor << " of rank " << e.rank << " on "
                                         << group_axis_name(e.axis);
    ++seen[e.axis];
  }
  std::printf("stepped: %d tp, %d dp, %d pp, %d world collectives\n", seen[GroupAxis::tp], seen[GroupAxis::dp],
              seen[GroupAxis::pp], seen[GroupAxis::none]);
  EXPECT_GT(seen[GroupAxis::tp], 0) << "tensor-parallel collectives were stepped";
  EXPECT_GT(seen[GroupAxis::dp], 0) << "data-parallel gradient all-reduces were stepped";
}

// A replay's timeline opens on one timed step (item 7): DDP --variant all's first variant,
// its second step, not the whole run with its set-up and four variants.
TEST(LivePanels, AReplaysTimelineOpensOnOneTimedStep) {
  LabConfig cfg;
  cfg.ranks = 2;
  cfg.options.set("variant", "all");
  cfg.options.set("steps", "3");
  cfg = with_defaults(*find_lab("ddp"), cfg);
  Trace trace(2);
  trace.set_meta(MetaKey::lab, "ddp");
  ThreadsOptions opt;
  opt.world_size = 2;
  opt.trace = &trace;
  ASSERT_TRUE(run_threads(opt, [&](Comm& c) { find_lab("ddp")->run(c, cfg); }).ok());
  const std::string path = ::testing::TempDir() + "timeline_opening_" + std::to_string(::getpid()) + ".json";
  write_chrome_trace(trace, path);
  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(viz::Session::replay(path));
  auto* timeline = dynamic_cast<viz::TimelineView*>(app.panel(ViewKind::timeline));
  ASSERT_NE(timeline, nullptr);
  gui.frame(app);
  const viz::TraceData& d = app.session->data();
  const double shown = timeline->axis.t1 - timeline->axis.t0, run = double(d.t_end - d.t_begin);
  std::printf("the timeline opens on %.2f ms of a %.2f ms run\n", shown * 1e-6, run * 1e-6);
  EXPECT_TRUE(timeline->one_step);
  EXPECT_LT(shown, 0.25 * run) << "it opened on more than one step";
  const std::optional<viz::TimeRange> step = viz::first_timed_step(d);
  ASSERT_TRUE(step);
  EXPECT_LE(timeline->axis.t0, double(step->begin));
  EXPECT_GE(timeline->axis.t1, double(step->end));
  std::remove(path.c_str());
  std::remove((path + ".dtlt").c_str());
}

// Every training lab's memory view has its formula (item 8): per rank, AdamW's 16 B/param on
// the rank's parameters plus the activations the lab predicts it keeps, checked here
// against what each rank's tracker held at its peaks (model state and activations by tag).
TEST(LivePanels, EveryLabsMemoryViewHasEachRanksFormula) {
  struct Case {
    const char* lab;
    int ranks;
    std::map<std::string, std::string> options;
  };
  for (const Case& c : {Case{"pipeline", 4, {{"micro-batches", "8"}}}, Case{"tensor_parallel", 2, {}},
                        Case{"grid", 8, {{"dp", "2"}, {"tp", "2"}, {"pp", "2"}}}, Case{"gpt", 2, {{"steps", "5"}}}}) {
    LabConfig cfg;
    cfg.ranks = c.ranks;
    for (const auto& [k, v] : c.options) cfg.options.set(k, v);
    cfg = with_defaults(*find_lab(c.lab), cfg);
    Trace trace(c.ranks);
    ThreadsOptions opt;
    opt.world_size = c.ranks;
    opt.trace = &trace;
    ASSERT_TRUE(run_threads(opt, [&](Comm& comm) { find_lab(c.lab)->run(comm, cfg); }).ok()) << c.lab;
    const viz::TraceData d = viz::from_trace(trace);
    const viz::MemoryPicture pic = viz::memory_at(d, d.t_end);
    ASSERT_EQ(pic.formula_of_rank.size(), std::size_t(c.ranks)) << c.lab << ": no formula per rank";
    std::vector<MemoryByTag> held(std::size_t(c.ranks));
    for (const Event& e : trace.snapshot())
      if (e.rank >= 0 && e.rank < c.ranks) held[std::size_t(e.rank)].apply(e);
    for (int r = 0; r < c.ranks; ++r) {
      const MemoryByTag& m = held[std::size_t(r)];
      const double counted =
          double(m.peak[int(MemTag::param)] + m.peak[int(MemTag::grad)] + m.peak[int(MemTag::optimizer)] +
                 m.peak[int(MemTag::master)] + m.peak[int(MemTag::activation)]);
      const double formula = pic.formula_of_rank[std::size_t(r)];
      std::printf("%-16s rank %d: formula %8.1f KiB, held %8.1f KiB (model state + activations at their peaks)\n",
                  c.lab, r, formula / 1024, counted / 1024);
      EXPECT_NEAR(formula, counted, 0.02 * counted) << c.lab << " rank " << r;
    }
    EXPECT_FALSE(pic.formula_text.empty()) << c.lab;
  }
}

// With --schedule all each schedule keeps its own micro-batches in flight: the memory view's
// ticks at the cursor are the formula of the schedule running there (GPipe's first stage holds
// all M micro-batches, 1F1B's P), not the last schedule's for every one.
TEST(LivePanels, EachSchedulesFormulaShowsInsideItsPhase) {
  constexpr int P = 2;
  LabConfig cfg;
  cfg.ranks = P;
  cfg.options.set("schedule", "all");
  cfg.options.set("micro-batches", "8");
  cfg = with_defaults(*find_lab("pipeline"), cfg);
  Trace trace(P);
  ThreadsOptions opt;
  opt.world_size = P;
  opt.trace = &trace;
  ASSERT_TRUE(run_threads(opt, [&](Comm& c) { find_lab("pipeline")->run(c, cfg); }).ok());
  const viz::TraceData d = viz::from_trace(trace);
  // Rank 0's memory by tag at its peaks inside [begin, end): what its tracker held, the
  // reference each schedule's formula must match.
  const std::vector<Event> events = trace.snapshot();
  auto held_in = [&](std::int64_t begin, std::int64_t end) {
    MemoryByTag m;
    for (const Event& e : events)
      if (e.rank == 0 && e.begin_ns < begin) m.apply(e);
    std::copy(std::begin(m.bytes), std::end(m.bytes), std::begin(m.peak));  // peaks from the phase's start
    for (const Event& e : events)
      if (e.rank == 0 && e.begin_ns >= begin && e.begin_ns < end) m.apply(e);
    return double(m.peak[int(MemTag::param)] + m.peak[int(MemTag::grad)] + m.peak[int(MemTag::optimizer)] +
                  m.peak[int(MemTag::master)] + m.peak[int(MemTag::activation)]);
  };
  std::map<std::string, double> stage0;  // schedule → rank 0's formula inside its phase
  for (const Event& e : d.events)
    if (e.kind == EventKind::phase && e.rank == 0 && d.role(e).schedule) {
      const viz::MemoryPicture pic = viz::memory_at(d, (e.begin_ns + e.end_ns) / 2);
      ASSERT_EQ(pic.formula_of_rank.size(), std::size_t(P));
      const std::string schedule = d.label(e.label);
      stage0[schedule] = pic.formula_of_rank[0];
      const double held = held_in(e.begin_ns, e.end_ns);
      std::printf("%-12s stage 0: formula %8.1f KiB, held %8.1f KiB inside the phase\n", schedule.c_str(),
                  stage0[schedule] / 1024, held / 1024);
      EXPECT_NEAR(stage0[schedule], held, 0.02 * held) << schedule;
    }
  ASSERT_TRUE(stage0.count("gpipe") && stage0.count("1f1b")) << "phases found: " << stage0.size();
  std::printf("stage 0's formula: gpipe %.1f KiB, 1f1b %.1f KiB\n", stage0["gpipe"] / 1024, stage0["1f1b"] / 1024);
  EXPECT_GT(stage0["gpipe"], stage0["1f1b"]) << "GPipe keeps M = 8 micro-batches in flight on stage 0, 1F1B P = 2";
}
