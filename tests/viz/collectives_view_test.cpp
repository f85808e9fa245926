// The collectives lab's view shows each run as itself (issue 27, item 2): a naive run as a
// star on rank 0 beside (P-1)·N, a tree as levels, halving-doubling as pairs, the ring as a
// ring; reduce-scatter, all-gather and broadcast with their own cells and formulas; every
// run's counters from zero (a replay's timed repetitions and identity checks are runs of
// their own, named so); 16 ranks as a readable grid. Drawn headless from live runs and a
// replay; each check reads what the view showed (RingView::shown).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/link.h"
#include "core/comm/threads_backend.h"
#include "core/trace/chrome_writer.h"
#include "labs/collectives/collectives_lab.h"
#include "tests/viz/headless_imgui.h"
#include "viz/views/collectives/ring_view.h"

using namespace dtl;
using viz::RingView;
using viz::RunShape;

namespace {

// What the view showed on the last frame of each run (in the order the runs came).
struct RunSeen {
  RingView::Shown first, last;
  std::size_t frames = 0;
};

std::vector<RunSeen> step_to_the_end(viz::App& app, viz::testing::HeadlessImGui& gui) {
  auto* view = dynamic_cast<RingView*>(app.panel(kRingView));
  EXPECT_NE(view, nullptr);
  std::vector<RunSeen> runs;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int guard = 0; guard < 100000 && std::chrono::steady_clock::now() < deadline; ++guard) {
    const std::size_t before = app.controls.cursor;
    app.StepOne();
    app.controls.anim = 1;  // the transfer has landed
    gui.frame(app);
    if (!view) break;
    if (view->shown.run.empty()) continue;  // live: before the first transfer has landed
    if (runs.empty() || runs.back().last.run != view->shown.run) runs.push_back({view->shown, view->shown, 0});
    runs.back().last = view->shown;
    runs.back().frames++;
    const bool at_end = app.session->finished() && app.controls.cursor >= app.session->steps().size();
    if (at_end && app.controls.cursor == before) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_TRUE(app.session->finished()) << app.session->status();
  return runs;
}

std::vector<RunSeen> live_runs(const std::map<std::string, std::string>& options, int ranks, std::uint64_t bytes,
                               float w = 1280, float h = 800) {
  viz::testing::HeadlessImGui gui(w, h);
  LabConfig cfg;
  cfg.ranks = ranks;
  cfg.bytes = bytes;
  for (const auto& [k, v] : options) cfg.options.set(k, v);
  viz::App app;
  app.Open(viz::Session::live(*find_lab("collectives"), cfg));
  return step_to_the_end(app, gui);
}

void print(const std::vector<RunSeen>& runs) {
  for (const RunSeen& r : runs)
    std::printf("  %-48s shape %d grid %d | sent %6.0f of %6.0f B (%s) | transfers %zu/%zu | complete cells %d\n",
                r.last.run.c_str(), int(r.last.shape), int(r.last.matrix), r.last.most_sent, r.last.predicted,
                r.last.formula.c_str(), r.last.done, r.last.total, r.last.complete_cells);
}

}  // namespace

TEST(CollectivesView, EachAlgorithmIsDrawnInItsShapeBesideItsFormula) {
  constexpr int P = 4;
  const std::vector<RunSeen> runs = live_runs({{"algo", "all"}}, P, 1024);
  print(runs);
  ASSERT_EQ(runs.size(), 4u) << "naive, ring, tree, rhd";
  const struct {
    const char* name;
    RunShape shape;
    const char* formula;
  } want[] = {{"naive all_reduce", RunShape::star, "(P-1)·N"},
              {"ring all_reduce", RunShape::ring, "2(P-1)/P·N"},
              {"tree all_reduce", RunShape::tree, "⌈log2 P⌉·N"},
              {"rhd all_reduce", RunShape::pairs, "2(P-1)/P·N"}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RingView::Shown& end = runs[i].last;
    EXPECT_EQ(end.run.rfind(want[i].name, 0), 0u) << end.run;
    EXPECT_EQ(end.shape, want[i].shape) << end.run;
    EXPECT_NE(end.formula.find(want[i].formula), std::string::npos) << end.run << ": " << end.formula;
    // Counted over this run alone: its busiest rank sent what its formula says, no more.
    EXPECT_EQ(end.most_sent, end.predicted) << end.run;
    EXPECT_EQ(end.done, end.total) << end.run;
    EXPECT_EQ(end.complete_cells, P * P) << end.run << ": every chunk of every rank holds all ranks' data";
    EXPECT_LE(runs[i].first.most_sent, 1024) << end.run << ": its first frame counts its first transfer only";
    EXPECT_FALSE(end.matrix) << "4 ranks' cells fit on their nodes";
  }
}

TEST(CollectivesView, AllGatherAndBroadcastShowWhoHoldsTheFinalData) {
  constexpr int P = 4;
  const std::vector<RunSeen> ag = live_runs({{"collective", "all_gather"}, {"algo", "ring"}}, P, 1024);
  print(ag);
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_EQ(ag[0].first.complete_cells, P + 1) << "own chunks, and the first chunk received";
  EXPECT_EQ(ag[0].last.complete_cells, P * P);
  EXPECT_NE(ag[0].last.formula.find("(P-1)/P·N"), std::string::npos) << ag[0].last.formula;
  EXPECT_EQ(ag[0].last.most_sent, ag[0].last.predicted);

  const std::vector<RunSeen> bc = live_runs({{"collective", "broadcast"}, {"algo", "tree"}}, P, 1024);
  print(bc);
  ASSERT_EQ(bc.size(), 1u);
  EXPECT_EQ(bc[0].last.shape, RunShape::tree);
  EXPECT_EQ(bc[0].first.complete_cells, 2 * P) << "rank 0's data, and the first rank it reached";
  EXPECT_EQ(bc[0].last.complete_cells, P * P);
  EXPECT_EQ(bc[0].last.most_sent, bc[0].last.predicted);

  const std::vector<RunSeen> rs = live_runs({{"collective", "reduce_scatter"}, {"algo", "ring"}}, P, 1024);
  print(rs);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].last.complete_cells, P) << "each rank's own chunk holds every rank's data, the rest partial sums";
  EXPECT_EQ(rs[0].last.most_sent, rs[0].last.predicted) << "(P-1)/P·N, not the all-reduce's 2(P-1)/P·N";
}

TEST(CollectivesView, SixteenRanksAreAReadableGrid) {
  constexpr int P = 16;
  const std::vector<RunSeen> runs = live_runs({{"algo", "ring"}}, P, 4096);
  print(runs);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].last.matrix) << "16 ranks × 16 chunks do not fit on the nodes: a grid beside them";
  EXPECT_EQ(runs[0].last.complete_cells, P * P);
  EXPECT_EQ(runs[0].last.most_sent, runs[0].last.predicted);
}

// A replay of `dtlab run collectives --iters 1 --trace`: the traced run, its timed
// repetitions and the identity check are runs of their own, each counted from zero.
TEST(CollectivesView, AReplayCountsEachRunApartAndNamesTheChecks) {
  constexpr int P = 4;
  LabConfig cfg;
  cfg.ranks = P;
  cfg.bytes = 1024;
  cfg.iters = 1;
  cfg.warmup = 0;
  cfg.options.set("algo", "ring");
  cfg = with_defaults(*find_lab("collectives"), cfg);
  Trace trace(P);
  trace.set_meta(MetaKey::lab, "collectives");
  trace.set_meta(MetaKey::bytes, "1024");
  ThreadsOptions opt;
  opt.world_size = P;
  opt.trace = &trace;
  ASSERT_TRUE(run_threads(opt, [&](Comm& c) { find_lab("collectives")->run(c, cfg); }).ok());
  const std::string path = ::testing::TempDir() + "collectives_view_" + std::to_string(::getpid()) + ".json";
  write_chrome_trace(trace, path);

  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(viz::Session::replay(path));
  const std::vector<RunSeen> runs = step_to_the_end(app, gui);
  print(runs);
  ASSERT_EQ(runs.size(), 3u) << "the traced run, one timed run, the identity check";
  EXPECT_NE(runs[0].last.run.find("ring all_reduce · run 1 of 2"), std::string::npos) << runs[0].last.run;
  EXPECT_NE(runs[1].last.run.find("ring all_reduce · run 2 of 2"), std::string::npos) << runs[1].last.run;
  EXPECT_EQ(runs[2].last.run.rfind("identity check", 0), 0u) << runs[2].last.run;
  for (const RunSeen& r : runs) {
    EXPECT_EQ(r.last.most_sent, r.last.predicted) << r.last.run << ": counted over its own run";
    EXPECT_EQ(r.last.complete_cells, P * P) << r.last.run;
  }
  std::remove(path.c_str());
  std::remove((path + ".dtlt").c_str());
}

// Issue 51: the sliced ring's slices are in flight on every link at once, and with C channels
// C of them share a link side by side (the parallel rings). A replay of a run on an emulated
// link (2 ms per message, so the transfers overlap in time as on a real one): at some frame
// transfers other than the one at the cursor are on the wire on several links, and 2 channels
// put 2 on one link; never more than the 2 channels' on one link.
TEST(CollectivesView, SlicesInFlightOnEveryLinkAndChannelsSideBySide) {
  constexpr int P = 4;
  LabConfig cfg;
  cfg.ranks = P;
  cfg.bytes = 4096;
  cfg.iters = 1;
  cfg.warmup = 0;
  cfg.link = make_link("", 1.0, 2000);
  for (const auto& [k, v] :
       std::map<std::string, std::string>{{"algo", "ring_sliced"}, {"slices", "2"}, {"channels", "2"}})
    cfg.options.set(k, v);
  cfg = with_defaults(*find_lab("collectives"), cfg);
  Trace trace(P);
  trace.set_meta(MetaKey::lab, "collectives");
  trace.set_meta(MetaKey::bytes, "4096");
  ThreadsOptions opt;
  opt.world_size = P;
  opt.trace = &trace;
  opt.link = cfg.link;
  ASSERT_TRUE(run_threads(opt, [&](Comm& c) { find_lab("collectives")->run(c, cfg); }).ok());
  const std::string path = ::testing::TempDir() + "sliced_view_" + std::to_string(::getpid()) + ".json";
  write_chrome_trace(trace, path);

  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(viz::Session::replay(path));
  auto* view = dynamic_cast<RingView*>(app.panel(kRingView));
  ASSERT_NE(view, nullptr);
  int most_in_flight = 0, most_on_link = 0;
  for (std::size_t i = 0; i < app.session->steps().size(); ++i) {
    app.StepOne();
    app.controls.anim = 1;
    gui.frame(app);
    if (view->shown.run.rfind("ring_sliced", 0) != 0) continue;  // the ring's runs, not the checks
    most_in_flight = std::max(most_in_flight, view->shown.in_flight);
    most_on_link = std::max(most_on_link, view->shown.most_on_one_link);
  }
  std::printf("  most on the wire besides the cursor's: %d, most on one link: %d\n", most_in_flight, most_on_link);
  EXPECT_GE(most_in_flight, P) << "a slice on every link at once";
  EXPECT_EQ(most_on_link, 2) << "the 2 channels' slices side by side on one link, never more";
  std::remove(path.c_str());
  std::remove((path + ".dtlt").c_str());
}
