// The experts lab on the learner's code, as graded cases of the exercises it calls: an
// exercise that passes its own tests but breaks its lab (a layout whose rows land on the
// wrong rank, a permutation that loses a slot) loses its points here. Each case is the run
// `dtlab run experts` makes on 2 and 4 thread ranks, with capacity drops and hot experts;
// its report's checks (one rank's loss, gradients, weights and routing, every all_to_allv's
// bytes against the routed rows) must all hold.
#include <gtest/gtest.h>

#include <string>

#include "core/comm/threads_backend.h"
#include "labs/lab.h"
#include "tests/grade/grade_lab_util.h"

using namespace dtl;

namespace {

void expect_lab_passes(const std::string& exercise) {
  for (int P : {2, 4})
    for (const char* skew : {"0", "3"}) {
      LabConfig cfg;
      cfg.ranks = P;
      cfg.options = {{"layers", "2"}, {"tokens", "64"}, {"steps", "2"}, {"router-skew", skew}};
      grade::expect_lab_passes("experts", cfg,
                               "the experts lab (--router-skew " + std::string(skew) + ") on " + std::to_string(P) +
                                   " ranks, with your " + exercise);
    }
}

}  // namespace

TEST(TopKRouter, ItsLabPassesWithIt) { expect_lab_passes("route_top_k and kept_slots"); }
TEST(DispatchLayout, ItsLabPassesWithIt) { expect_lab_passes("plan_dispatch"); }
TEST(Combine, ItsLabPassesWithIt) { expect_lab_passes("combine_rows and combine_backward"); }
