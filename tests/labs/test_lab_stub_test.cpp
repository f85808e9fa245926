// The test lab on the exercise track (its exercises.cpp, the stub, linked instead of its
// solutions.cpp): the lab's run fails on the learner's unwritten function with the message
// that names the exercise and the grader's hint command, and the hints are there to give.
#include <gtest/gtest.h>

#include <string>

#include "core/comm/threads_backend.h"
#include "labs/lab.h"
#include "tests/test_lab/labs/test_lab/test_lab.h"

using namespace dtl;

namespace {
const bool kRegistered = (register_lab(&test_lab_info), true);
}  // namespace

TEST(TestLabStub, TheRunStopsAtTheStubNamingItsExerciseAndHint) {
  ASSERT_TRUE(kRegistered);
  const LabInfo* lab = find_lab("test_lab");
  ASSERT_NE(lab, nullptr);
  const LabConfig cfg = with_defaults(*lab, LabConfig{.ranks = 2});
  ThreadsOptions opt;
  opt.world_size = 2;
  opt.timeout_s = 10;
  const RunResult r = run_threads(opt, [&](Comm& c) { lab->run(c, cfg); });
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("weighted_sum is not implemented yet"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("dtlab grade --exercise weighted_sum --hint 1"), std::string::npos) << r.error;
  EXPECT_FALSE(exercise_hint("weighted_sum", 1).empty());
}
