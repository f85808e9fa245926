// A lab's own view is its folder's file: the test lab's (tests/test_lab/viz/views/test_lab/) registers its
// panel from its own file, the viewer lays it out first as the lab lists it, and drawing a
// live, stepped run of the lab (headless ImGui: fonts built, no window) shows the bytes the
// run moved, checked against 4n. Every view of every built-in lab has its panel too (the
// labs' views/ folders are compiled into the app without any viewer file naming them).
#include <gtest/gtest.h>
#include <imgui.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "labs/lab.h"
#include "tests/test_lab/labs/test_lab/test_lab.h"
#include "tests/test_lab/viz/views/test_lab/bytes_view.h"
#include "tests/viz/headless_imgui.h"
#include "viz/app/app.h"

using namespace dtl;

namespace {
const bool kRegistered = (register_lab(&test_lab_info), true);  // the one line a new lab needs

using viz::testing::HeadlessImGui;
}  // namespace

TEST(LabViews, EveryViewOfEveryLabHasItsPanel) {
  ASSERT_TRUE(kRegistered);
  for (const LabInfo& lab : lab_registry())
    for (ViewKind v : lab.views) EXPECT_NE(viz::find_panel(v), nullptr) << lab.name << "'s view " << view_kind_name(v);
  const viz::PanelKind* bytes = viz::find_panel(kBytesView);
  ASSERT_NE(bytes, nullptr);
  EXPECT_STREQ(bytes->title, "Bytes per rank: measured vs 4n");
  EXPECT_THROW(viz::register_panel({kBytesView, "again", bytes->make}), Error);  // read already, and twice
}

TEST(LabViews, TheTestLabsOwnViewShowsItsLiveRun) {
  const int ranks = 3, length = 250;
  LabConfig cfg;
  cfg.ranks = ranks;
  cfg.options.set("length", std::to_string(length));
  cfg = with_defaults(*find_lab("test_lab"), cfg);
  HeadlessImGui gui;
  viz::App app;
  app.Open(viz::Session::live(*find_lab("test_lab"), cfg));
  ASSERT_EQ(app.panels.size(), 3u);
  EXPECT_EQ(app.panels[0].kind->kind, kBytesView) << "the lab's main view comes first";
  auto* view = dynamic_cast<viz::BytesView*>(app.panel(kBytesView));
  ASSERT_NE(view, nullptr);
  gui.frame(app);
  ASSERT_EQ(view->shown_bytes.size(), std::size_t(ranks));
  for (double b : view->shown_bytes) EXPECT_EQ(b, 0) << "nothing has moved before the first step";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!app.session->finished() && std::chrono::steady_clock::now() < deadline) {
    app.StepOne();
    gui.frame(app);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(app.session->finished()) << app.session->status();
  gui.frame(app);
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(view->shown_bytes[std::size_t(r)], 4.0 * length) << "rank " << r << ": one all-reduce of 4n bytes";
}

namespace {
// A report row's measured value, from the report JSON a run leaves in its trace's metadata.
double measured(const std::string& report_json, const std::string& id) {
  const nlohmann::json j = nlohmann::json::parse(report_json);
  for (const nlohmann::json& row : j.at("rows"))
    if (row.at("id") == id) return row.at("measured").get<double>();
  ADD_FAILURE() << "no row " << id << " in the report";
  return -1;
}
}  // namespace

// A learner stepping DDP in the viewer (by collective), a few milliseconds per step, sees the
// step time a free run measures: the run's clocks leave the pauses out. Before, every paused
// millisecond counted (about 170 ms per step here against 3 ms free).
TEST(LabViews, ASteppedDdpRunMeasuresTheStepTimeOfAFreeRun) {
  const LabInfo& lab = *find_lab("ddp");
  LabConfig cfg;
  cfg.ranks = 4;
  cfg.options.set("bucket-mb", "0.25");
  HeadlessImGui gui;
  viz::App app;
  app.Open(viz::Session::live(lab, cfg));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  int steps = 0;
  while (!app.session->finished() && std::chrono::steady_clock::now() < deadline) {
    app.StepOne();
    gui.frame(app);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the learner, very fast
    ++steps;
  }
  ASSERT_TRUE(app.session->finished()) << app.session->status();
  gui.frame(app);
  const std::string* stepped_report = app.session->data().meta_of(MetaKey::report);
  ASSERT_NE(stepped_report, nullptr) << app.session->status();
  const double stepped = measured(*stepped_report, "bucketed.step_time");

  LabConfig free_cfg = with_defaults(lab, app.session->config());  // the live run's own options
  Trace trace(cfg.ranks);
  ThreadsOptions opt;
  opt.world_size = cfg.ranks;
  opt.trace = &trace;
  Report free_report;
  const RunResult r = run_threads(opt, [&](Comm& c) {
    Report mine = lab.run(c, free_cfg);
    if (c.rank() == 0) free_report = std::move(mine);
  });
  ASSERT_TRUE(r.ok()) << r.error;
  const double free_run = free_report.find("bucketed.step_time")->measured;
  const double paused = 0.003 * steps;
  std::printf("stepped %d steps (%.3f s of pauses): step time %.3f ms stepped, %.3f ms free\n", steps, paused,
              stepped * 1e3, free_run * 1e3);
  // Noise on a shared 2-core machine is a factor, not a percent: the pauses were 50x the step.
  EXPECT_LT(stepped, 3 * free_run + 0.002) << "the stepped run counted the learner's pauses";
  EXPECT_LT(stepped, 0.2 * paused);
}

// A learner stepping the pipeline transfer by transfer sees the bubble of a free run, within
// 3 points of (P−1)/(M+P−1) with --compute-us: each rank's run time leaves out its waits for
// the learner and the one-transfer-at-a-time order stepping imposes (core/trace/run_clock.h).
// Before, the stepped run read 0.76 (every stage computing alone) under "all checks passed".
TEST(LabViews, ASteppedPipelineMeasuresTheBubbleOfAFreeRun) {
  const LabInfo& lab = *find_lab("pipeline");
  LabConfig cfg;
  cfg.ranks = 4;
  cfg.options.set("micro-batches", "4");
  // 3 ms per F: a thread woken a millisecond late on a loaded 2-core machine (CI runs this
  // beside other tests) moved a 1 ms schedule's bubble by 4 points, a 3 ms one's by ~1.
  cfg.options.set("compute-us", "3000");
  cfg.options.set("steps", "1");
  HeadlessImGui gui;
  viz::App app;
  app.Open(viz::Session::live(lab, cfg));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (!app.session->finished() && std::chrono::steady_clock::now() < deadline) {
    app.StepOne();
    gui.frame(app);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(app.session->finished()) << app.session->status();
  gui.frame(app);
  const std::string* report = app.session->data().meta_of(MetaKey::report);
  ASSERT_NE(report, nullptr) << app.session->status();
  const double stepped = measured(*report, "1f1b.bubble");
  const double P = 4, M = 4, formula = (P - 1) / (M + P - 1);
  std::printf("stepped pipeline: bubble %.4f, formula (P-1)/(M+P-1) = %.4f\n", stepped, formula);
  EXPECT_NEAR(stepped, formula, 0.03);
}
