// The lab catches what the grader catches (issue 50): linked with a mutant of the pipeline's
// reference solutions (tests/grade/mutate.cmake, one_f_one_b_all_forwards_first: GPipe's order
// under 1F1B's name), `dtlab run pipeline --schedule 1f1b` must FAIL its in-flight checks. Its
// predictions come from core/theory's 1F1B, min(M, P − s), never from the schedule it runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/trace/trace.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

TEST(LabCatchesMutant, PipelineFailsAOneFOneBThatRunsEveryForwardFirst) {
  const int P = 4, M = 8;
  Trace trace(P);
  const Report rep = test::run_for_results("pipeline", P, {{"schedule", "1f1b"}, {"width", "16"}, {"depth", "4"},
                                                           {"batch", "16"}, {"micro-batches", std::to_string(M)}}, trace);
  EXPECT_FALSE(rep.ok) << "the lab passed a schedule that holds every micro-batch:\n" << rep.to_text();
  for (int s = 0; s < P; ++s) {
    const ReportRow* r = rep.find("1f1b.in_flight_stage" + std::to_string(s));
    ASSERT_NE(r, nullptr);
    std::printf("stage %d: in flight %g, predicted %g\n", s, r->measured, r->predicted);
    EXPECT_EQ(r->predicted, std::min(M, P - s)) << "the prediction is 1F1B's, not the run's";
    EXPECT_EQ(r->measured, M) << "the mutant holds every micro-batch";
  }
}
