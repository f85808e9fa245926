// The collectives lab on the learner's code, as graded cases of the exercises it calls: an
// exercise that passes its own tests but breaks its lab (an average divided twice, a chunk
// left unfinished) loses its points here. Each case is the run `dtlab run collectives`
// makes, on 3 and 4 thread ranks, a sum and an average; its report's checks must all hold.
#include <gtest/gtest.h>

#include <string>

#include "core/comm/threads_backend.h"
#include "labs/lab.h"
#include "tests/grade/grade_lab_util.h"

using namespace dtl;

namespace {

// Every check of the lab's report for `collective` by the ring, or the first failing one.
void expect_lab_passes(const std::string& exercise, const std::string& collective) {
  for (const char* op : {"sum", "avg"})
    for (int P : {3, 4}) {
      LabConfig cfg;
      cfg.ranks = P;
      cfg.bytes = 4 * 1003;  // an odd count: chunks of unequal sizes
      cfg.options = {{"collective", collective}, {"algo", "ring"}, {"op", op}};
      grade::expect_lab_passes("collectives", cfg,
                               "the collectives lab (--collective " + collective + " --algo ring --op " + op + ") on " +
                                   std::to_string(P) + " ranks, with your " + exercise);
    }
}

}  // namespace

TEST(RingReduceScatter, ItsLabPassesWithIt) { expect_lab_passes("ring_reduce_scatter", "reduce_scatter"); }
TEST(RingAllGather, ItsLabPassesWithIt) { expect_lab_passes("ring_all_gather", "all_gather"); }
TEST(RingAllReduce, ItsLabPassesWithIt) { expect_lab_passes("ring_all_reduce", "all_reduce"); }
