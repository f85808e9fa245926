// The pipeline lab: every schedule on P = 2 and 4 stages (interleaved with v = 2) ends with
// the weights of one rank on the global batch; activation memory and in-flight counts per
// stage equal the schedule's prediction; bytes between stages are exact; with emulated
// action times the measured bubble is the formula's. (Bad configurations and a silent
// stage: tests/cli/cli_usage_test.cpp, through the command.)
#include "labs/pipeline/pipeline_lab.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/theory/schedule_csv.h"
#include "core/trace/trace.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

namespace {

Report run_pipeline(int P, std::map<std::string, std::string> options, Trace& trace) {
  return test::run_for_results("pipeline", P, std::move(options), trace);
}

using test::row;

}  // namespace

TEST(PipelineLab, EveryScheduleEqualsOneRankOnTheGlobalBatch) {
  for (int P : {2, 4}) {
    Trace trace(P);
    // 9 layers: uneven over 2 and 4 stages (and 8 virtual stages).
    const Report rep = run_pipeline(
        P, {{"schedule", "all"}, {"width", "24"}, {"depth", "9"}, {"batch", "16"}, {"micro-batches", "8"}}, trace);
    EXPECT_TRUE(rep.ok) << "P=" << P << "\n" << rep.to_text();
    for (const char* k : {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "interleaved-zb", "dualpipev"}) {
      const double d = row(rep, std::string(k) + ".weight_diff_vs_one_rank");
      std::printf("P=%d %-14s max |w - 1 rank| %.3g\n", P, k, d);
      EXPECT_LT(d, 1e-5) << k << " P=" << P;
      EXPECT_LT(row(rep, std::string(k) + ".loss_last"), row(rep, std::string(k) + ".loss_first")) << k;
    }
  }
}

TEST(PipelineLab, InFlightAndActivationMemoryPerStageFollowTheSchedule) {
  const int P = 4, M = 8;
  Trace trace(P);
  const Report rep = run_pipeline(
      P, {{"schedule", "all"}, {"width", "32"}, {"depth", "8"}, {"batch", "32"}, {"micro-batches", std::to_string(M)}},
      trace);
  ASSERT_TRUE(rep.ok) << rep.to_text();
  for (int s = 0; s < P; ++s) {
    const std::string k = std::to_string(s);
    // GPipe holds every micro-batch; 1F1B at most P − s, independent of M (seed 001).
    EXPECT_EQ(row(rep, "gpipe.in_flight_stage" + k), M);
    EXPECT_EQ(row(rep, "1f1b.in_flight_stage" + k), std::min(M, P - s));
    EXPECT_EQ(row(rep, "1f1b.warmup_stage" + k), std::min(M, P - s)) << "forwards before the first backward";
    if (s > 0) {
      EXPECT_LT(row(rep, "1f1b.activation_stage" + k), row(rep, "1f1b.activation_stage" + std::to_string(s - 1)))
          << "the first stage holds the most";
    }
    EXPECT_LT(row(rep, "1f1b.activation_stage" + k), row(rep, "gpipe.activation_stage" + k));
  }
}

TEST(PipelineLab, EmulatedTimesReproduceTheBubbleFormula) {
  // Seed 003: 2 stages, m = 1, 4, 8 micro-batches → 50 %, 80 %, 89 % efficiency. On an idle
  // machine the measured bubble is within 2 points of (P−1)/(M+P−1) (docs/labs.md, the pipeline milestones); here other
  // tests may share the 2 cores and delay a stage's wake-up, so the bound is 8 points: it
  // still tells the schedules apart (GPipe at M = 8 vs M = 4 differ by 9 points).
  for (int M : {1, 4, 8}) {
    Trace trace(2);
    const Report rep = run_pipeline(2,
                                    {{"schedule", "gpipe"},
                                     {"width", "16"},
                                     {"depth", "4"},
                                     {"batch", std::to_string(2 * M)},
                                     {"micro-batches", std::to_string(M)},
                                     {"compute-us", "3000"}},
                                    trace);
    ASSERT_TRUE(rep.ok) << rep.to_text();
    const double bubble = row(rep, "gpipe.bubble"), formula = 1.0 / (M + 1);
    std::printf("P=2 M=%d: bubble %.3f (formula %.3f), efficiency %.1f %%\n", M, bubble, formula, 100 * (1 - bubble));
    EXPECT_NEAR(bubble, formula, 0.08);
  }
}

// The default run (no --compute-us) says why its bubble is not the formula's when it is not,
// and which option shows the formula (issue 28): a note exactly when the gap is over 0.1.
TEST(PipelineLab, ADefaultRunSaysWhyItsBubbleDiffersFromTheFormula) {
  Trace trace(4);
  const Report rep = run_pipeline(4, {}, trace);
  const double measured = row(rep, "1f1b.bubble"), formula = *rep.find("1f1b.bubble")->predicted;
  bool noted = false;
  for (const std::string& n : rep.notes) noted = noted || n.find("--compute-us 2000") != std::string::npos;
  std::printf("default 1F1B on 4 stages: bubble %.3f, formula %.3f, note %s\n", measured, formula,
              noted ? "given" : "none");
  EXPECT_EQ(noted, measured - formula > 0.1);
  Trace paced(4);
  const Report with = run_pipeline(4, {{"compute-us", "2000"}}, paced);
  for (const std::string& n : with.notes)
    EXPECT_EQ(n.find("--compute-us 2000"), std::string::npos) << "paced: no such note";
}

// Today's schedules on 4 and 8 thread ranks, M from P to 4P: the weights of one rank, and activations
// in flight per stage exactly the published bound (Qi et al.; DualPipe's PP + 1). The bubble
// is checked in the simulator (pipeline_zoo_test.cpp): a measured one on 2 shared cores is timing.
TEST(PipelineLab, TodaysSchedulesEqualOneRankAndThePublishedInFlight) {
  for (int P : {4, 8})
    for (const char* k : {"zb-h2", "zb-v", "interleaved-zb", "dualpipev"})
      for (int M : {P, 2 * P, 4 * P}) {
        if (std::string(k) == "dualpipev" && M < 2 * P) continue;  // needs M ≥ 2P (torch's rule)
        Trace trace(P);
        const Report rep = run_pipeline(P,
                                        {{"schedule", k},
                                         {"width", "16"},
                                         {"depth", std::to_string(2 * P)},
                                         {"batch", std::to_string(M)},
                                         {"micro-batches", std::to_string(M)}},
                                        trace);
        EXPECT_TRUE(rep.ok) << k << " P=" << P << " M=" << M << "\n" << rep.to_text();
        const std::string n = std::string(k) + ".";
        EXPECT_LT(row(rep, n + "weight_diff_vs_one_rank"), 1e-5) << k << " P=" << P << " M=" << M;
        for (int s = 0; s < P; ++s) {
          const ReportRow* r = rep.find(n + "in_flight_published_stage" + std::to_string(s));
          ASSERT_NE(r, nullptr) << k;
          EXPECT_EQ(r->measured, *r->predicted) << k << " P=" << P << " M=" << M << " stage " << s;
        }
      }
}

namespace {

std::string temp_path(const std::string& name) { return testing::TempDir() + "/" + name; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

// A schedule written by hand in torch's CSV (a V over 2 ranks with overlapped pairs, I and W
// actions, an idle cell) runs and ends with one rank's weights; dtlab's own zb-v exported
// reads back as the schedule it ran.
TEST(PipelineLab, RunsATorchCsvScheduleAndExportsItsOwn) {
  const std::string hand = temp_path("hand_v.csv");
  std::ofstream(hand) << "0F0,0F1,3F0,3I0,3W0,(3F1;0B0)OVERLAP_F_B,3B1,,0I1,0W1\n"
                         "1F0,2F0,1F1,2B0,(2F1;1B0)OVERLAP_F_B,2B1,1B1\n";
  Trace trace(2);
  const Report rep = run_pipeline(2, {{"schedule-csv", hand}, {"width", "16"}, {"depth", "4"}, {"batch", "8"}}, trace);
  EXPECT_TRUE(rep.ok) << rep.to_text();
  EXPECT_LT(row(rep, "csv.weight_diff_vs_one_rank"), 1e-5);
  EXPECT_EQ(row(rep, "csv.in_flight_stage0"), *rep.find("csv.in_flight_stage0")->predicted);

  const std::string out = temp_path("zb_v.csv");
  Trace t2(4);
  const Report exported = run_pipeline(
      4, {{"schedule", "zb-v"}, {"export-csv", out}, {"width", "16"}, {"depth", "8"}, {"micro-batches", "8"}}, t2);
  EXPECT_TRUE(exported.ok) << exported.to_text();
  const pipeline::CsvSchedule back = pipeline::read_torch_csv(read_text(out));
  EXPECT_EQ(back.schedule.stages, pipeline::make_schedule(pipeline::ScheduleKind::zb_v, {4, 8, 2}).stages);
}

TEST(PipelineLab, ABrokenCsvIsAUsageErrorNamingTheCell) {
  const std::string bad = temp_path("bad.csv");
  std::ofstream(bad) << "0F0,0I0\n1F0,1B0\n";
  test::expect_usage_error("pipeline", 2, {{"schedule-csv", bad}}, "row 1 (rank 0), cell 2 \"0I0\"");
  test::expect_usage_error("pipeline", 2, {{"schedule-csv", bad}, {"schedule", "1f1b"}}, "drop --schedule");
  test::expect_usage_error("pipeline", 4, {{"schedule", "all"}, {"export-csv", temp_path("x.csv")}},
                           "--export-csv writes one schedule");
}
