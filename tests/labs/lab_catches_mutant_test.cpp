// The lab catches what the grader catches (issue 50): each case runs in a program linked with
// one mutant of a lab's reference solutions (tests/grade/mutate.cmake; tests/CMakeLists.txt
// names the case each mutant runs), and the lab's own run must FAIL, because its predictions
// come from theory or an independent reference, never from the learner's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/trace/trace.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

// one_f_one_b_all_forwards_first: GPipe's order under 1F1B's name. `dtlab run pipeline
// --schedule 1f1b` must fail its in-flight checks: core/theory's 1F1B holds min(M, P − s).
TEST(LabCatchesMutant, PipelineFailsAOneFOneBThatRunsEveryForwardFirst) {
  const int P = 4, M = 8;
  Trace trace(P);
  const Report rep = test::run_for_results(
      "pipeline", P,
      {{"schedule", "1f1b"}, {"width", "16"}, {"depth", "4"}, {"batch", "16"}, {"micro-batches", std::to_string(M)}},
      trace);
  EXPECT_FALSE(rep.ok) << "the lab passed a schedule that holds every micro-batch:\n" << rep.to_text();
  for (int s = 0; s < P; ++s) {
    const ReportRow* r = rep.find("1f1b.in_flight_stage" + std::to_string(s));
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->predicted.has_value());
    std::printf("stage %d: in flight %g, predicted %g\n", s, r->measured, *r->predicted);
    EXPECT_EQ(*r->predicted, std::min(M, P - s)) << "the prediction is 1F1B's, not the run's";
    EXPECT_EQ(r->measured, M) << "the mutant holds every micro-batch";
  }
}

// merge_nan_for_two_empty_sides: exp(−∞ − −∞) when neither side has seen a key. The lab's
// runs never merge two empty sides; its crafted-partials check against float64 does.
TEST(LabCatchesMutant, ContextParallelFailsAMergeThatGivesNaNForTwoEmptySides) {
  Trace trace(2);
  const Report rep = test::run_for_results("context_parallel", 2,
                                           {{"batch", "2"}, {"hidden", "16"}, {"layers", "1"}, {"seq", "16"}}, trace);
  EXPECT_FALSE(rep.ok) << "the lab passed a merge that gives NaN:\n" << rep.to_text();
  const ReportRow* r = rep.find("merge_vs_float64");
  ASSERT_NE(r, nullptr);
  std::printf("merge on crafted partials: error %g (a NaN reads as infinity)\n", r->measured);
  EXPECT_FALSE(r->passed());
}
