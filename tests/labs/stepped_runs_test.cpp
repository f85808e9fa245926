// Stepping measures the algorithm, not the learner (issue 27, item 1). Each lab runs twice
// on thread ranks with the configuration a live run in dtlab-viz uses (its live options,
// one traced run): once stepped through a StepGate whose controller "thinks" before every
// release, once free. Every timing row of the stepped report must read what the free run
// reads, within this machine's noise, although the pauses add up to many times the run:
//   - seconds (step time, exposed communication, ...): stepped ≤ 3·free + 3 ms
//   - a rate (busbw, algbw): stepped ≥ free / 3
//   - a fraction (the pipeline's bubble, with --compute-us so the schedule sets it): within
//     0.05 of the free run (and the pipeline's within 3 points of (P−1)/(M+P−1))
// and no stepped timing may come near the time the controller spent thinking.
// The terminal (`dtlab run LAB --step`) and the viewer are both controllers of this gate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <thread>

#include "core/comm/threads_backend.h"
#include "core/trace/step_gate.h"
#include "core/trace/trace.h"
#include "labs/lab.h"

using namespace dtl;

namespace {

constexpr auto kThink = std::chrono::milliseconds(4);  // the learner, very fast, before each release

struct LabCase {
  const char* lab;
  int ranks;
  std::map<std::string, std::string> options;
  std::uint64_t bytes = 64 << 10;  // --bytes (the collectives lab)
};
void PrintTo(const LabCase& c, std::ostream* os) { *os << c.lab << " on " << c.ranks << " ranks"; }

std::string failed_checks(const Report& rep) {
  std::string out;
  for (const ReportRow& row : rep.rows)
    if (!row.passed()) out += " " + row.id;
  return out;
}

// The configuration a live run starts from (viz/app/session.cpp does the same).
LabConfig live_config(const LabInfo& lab, const LabCase& c) {
  LabConfig cfg;
  cfg.ranks = c.ranks;
  cfg.bytes = c.bytes;
  for (const auto& [k, v] : c.options) cfg.options.set(k, v);
  for (const auto& [k, v] : lab.live_options)
    if (!cfg.options.has(k)) cfg.options.set_default(k, v);
  cfg = with_defaults(lab, cfg);
  cfg.iters = 0;
  cfg.warmup = 0;
  return cfg;
}

struct Outcome {
  Report report;
  int releases = 0;
  double thought_s = 0;  // the controller's pauses, in total
};

// One run of `lab`; with `stepped`, a controller thinks kThink before each release.
Outcome run_lab(const LabInfo& lab, const LabConfig& cfg, bool stepped) {
  Trace trace(cfg.ranks);
  StepGate gate(cfg.ranks, lab.step_unit);
  ThreadsOptions opt;
  opt.world_size = cfg.ranks;
  opt.trace = &trace;
  opt.gate = stepped ? &gate : nullptr;
  opt.compute_nice = lab.overlaps_compute ? 10 : 0;
  Outcome out;
  RunResult result;
  std::thread runner([&] {
    result = run_threads(opt, [&](Comm& c) {
      Report mine = lab.run(c, cfg);
      if (c.rank() == 0) out.report = std::move(mine);
    });
  });
  if (stepped) {
    while (gate.wait_quiet() == StepGate::State::transfer_waiting) {
      std::this_thread::sleep_for(kThink);
      gate.release_one();
      ++out.releases;
    }
  }
  runner.join();
  EXPECT_TRUE(result.ok()) << lab.name << (stepped ? " stepped: " : " free: ") << result.error;
  out.thought_s = std::chrono::duration<double>(kThink).count() * out.releases;
  return out;
}

bool is_fraction(const ReportRow& row) { return row.metric().find("bubble") != std::string::npos && row.unit.empty(); }

// Compares every timing row of the stepped report with the free one; returns how many it compared.
int compare_timings(const char* lab, const Outcome& stepped, const Outcome& free) {
  int compared = 0;
  for (const ReportRow& s : stepped.report.rows) {
    const ReportRow* f = free.report.find(s.id);
    if (!f || !(s.unit == "s" || s.unit == "B/s" || is_fraction(s))) continue;
    ++compared;
    std::printf("  %-12s %-36s stepped %-11.4g free %-11.4g (%d releases, %.3f s of pauses)\n", lab, s.id.c_str(),
                s.measured, f->measured, stepped.releases, stepped.thought_s);
    if (s.unit == "s") {
      EXPECT_LE(s.measured, 3 * f->measured + 0.003) << lab << " " << s.id << ": the stepped run counted the pauses?";
      EXPECT_GE(s.measured, f->measured / 3 - 0.003) << lab << " " << s.id << ": a clock that ran short (waits lost)";
      EXPECT_LT(s.measured, 0.5 * stepped.thought_s + 0.003) << lab << " " << s.id;
    } else if (s.unit == "B/s") {
      // A rate is bytes over the time beside it: stepped and free move the same bytes, so
      // rate × time agrees, and the time row above bounds the pauses (a few releases' wake-ups
      // weigh on a 0.3 ms collective, hence no bound on the rate alone where that row exists).
      const std::string time_id = s.id.substr(0, s.id.rfind('.')) + ".time";
      const ReportRow* st = stepped.report.find(time_id);
      const ReportRow* ft = free.report.find(time_id);
      if (st && ft && st->unit == "s") {
        EXPECT_NEAR(s.measured * st->measured, f->measured * ft->measured, 0.02 * f->measured * ft->measured)
            << lab << " " << s.id << ": a rate not taken over the clock that leaves the pauses out";
      } else {
        EXPECT_GE(s.measured, f->measured / 3) << lab << " " << s.id << ": a rate that fell with the pauses";
      }
    } else {  // a fraction: within 5 points, or 15 % of a large one (bubble / compute)
      EXPECT_NEAR(s.measured, f->measured, std::max(0.05, 0.15 * f->measured)) << lab << " " << s.id;
    }
  }
  return compared;
}

}  // namespace

class SteppedRun : public ::testing::TestWithParam<LabCase> {};

TEST_P(SteppedRun, ReportsTheTimingsOfAFreeRun) {
  const LabCase& c = GetParam();
  const LabInfo* lab = find_lab(c.lab);
  ASSERT_NE(lab, nullptr) << c.lab;
  const LabConfig cfg = live_config(*lab, c);
  const Outcome free = run_lab(*lab, cfg, false);
  const Outcome stepped = run_lab(*lab, cfg, true);
  ASSERT_TRUE(stepped.report.ok) << c.lab << ": a stepped run's checks failed:" << failed_checks(stepped.report);
  ASSERT_GT(stepped.releases, 2) << c.lab << ": nothing was stepped";
  EXPECT_GT(compare_timings(c.lab, stepped, free), 0) << c.lab << " reports no timing";
}

// The pipeline's bubble, stepped, against the schedule's formula: with --compute-us each
// action takes a fixed time, so the bubble is the schedule's (P−1)/(M+P−1) (1F1B, no
// interleaving). Before the per-thread run clock it read 0.76 (every stage computing alone).
TEST(SteppedRun, ThePipelinesBubbleIsTheSchedules) {
  const LabInfo& lab = *find_lab("pipeline");
  const LabConfig cfg = live_config(
      lab, {"pipeline", 4, {{"micro-batches", "4"}, {"compute-us", "1500"}, {"steps", "1"}, {"schedule", "1f1b"}}});
  const Outcome stepped = run_lab(lab, cfg, true);
  const ReportRow* bubble = stepped.report.find("1f1b.bubble");
  ASSERT_NE(bubble, nullptr);
  const double P = 4, M = 4, formula = (P - 1) / (M + P - 1);
  std::printf("stepped 1F1B, P=4, M=4: bubble %.4f, formula (P-1)/(M+P-1) = %.4f (%d releases)\n", bubble->measured,
              formula, stepped.releases);
  EXPECT_NEAR(bubble->measured, formula, 0.03);
}

INSTANTIATE_TEST_SUITE_P(
    EveryLab, SteppedRun,
    ::testing::Values(LabCase{"collectives", 4, {{"algo", "ring"}}}, LabCase{"collectives", 4, {{"algo", "rhd"}}},
                      LabCase{"ddp", 4, {}}, LabCase{"zero", 2, {{"stage", "3"}}},
                      LabCase{"pipeline", 4, {{"micro-batches", "4"}, {"compute-us", "1000"}, {"steps", "1"}}},
                      LabCase{"tensor_parallel", 2, {}},
                      LabCase{"grid", 4, {{"tp", "2"}, {"pp", "2"}, {"compute-us", "2000"}}}, LabCase{"gpt", 2, {}}),
    [](const ::testing::TestParamInfo<LabCase>& info) {
      std::string name = std::string(info.param.lab) + "_" + std::to_string(info.index);
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });
