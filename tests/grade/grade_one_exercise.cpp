// Each exercise graded on its own (issue 50): before each graded test, the exercise its suite
// grades (LabInfo::exercises: suite → id) becomes the one under grade, so a stub of any other
// exercise that the case calls runs its reference instead of failing it
// (exercises/track/unwritten.h). Linked into every grader with the graded suites.
#include <gtest/gtest.h>

#include <string>

#include "exercises/track/unwritten.h"
#include "labs/lab.h"

namespace {

// The exercise id that graded suite `suite` belongs to ("" for a suite no exercise names).
std::string exercise_of_suite(std::string suite) {
  if (const auto slash = suite.rfind('/'); slash != std::string::npos)
    suite = suite.substr(slash + 1);  // TEST_P's prefix
  for (const dtl::LabInfo& lab : dtl::lab_registry())
    for (const dtl::ExerciseInfo& e : lab.exercises)
      if (e.suite == suite) return e.id;
  return {};
}

class ExerciseUnderGrade : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& test) override {
    dtl::ex::set_exercise_under_grade(exercise_of_suite(test.test_suite_name()));
  }
  void OnTestEnd(const ::testing::TestInfo&) override { dtl::ex::set_exercise_under_grade(""); }
};

// Registered before main (gtest_main) runs the tests; GoogleTest owns the listener.
[[maybe_unused]] const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ExerciseUnderGrade);
  return true;
}();

}  // namespace
