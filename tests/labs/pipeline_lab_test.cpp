// The pipeline lab: every schedule on P = 2 and 4 stages (interleaved with v = 2) ends with
// the weights of one rank on the global batch; activation memory and in-flight counts per
// stage equal the schedule's prediction; bytes between stages are exact; with emulated
// action times the measured bubble is the formula's. (Bad configurations and a silent
// stage: tests/cli/cli_usage_test.cpp, through the command.)
#include "labs/pipeline/pipeline_lab.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.h"
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
    for (const char* k : {"gpipe", "1f1b", "interleaved", "zb-h1"}) {
      const double d = row(rep, std::string(k) + ".weight_diff_vs_one_rank");
      std::printf("P=%d %-11s max |w - 1 rank| %.3g\n", P, k, d);
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
