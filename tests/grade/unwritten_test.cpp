// A stub not written yet (exercises/track/unwritten.h): the grader sees NotImplemented, a lab the
// reference's result, and the learner one note per function naming the stub's file.
#include "exercises/track/unwritten.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/error.h"

namespace {

int reference_calls = 0;
int reference_add(int a, int b) {
  ++reference_calls;
  return a + b;
}

// What a stub in exercises/<lab>.cpp looks like.
int stub_add(int a, int b) { return dtl::ex::reference_until_written({"stub_add", "adding"}, reference_add, a, b); }

}  // namespace

// One test, in this order: the switch to references is one-way for a process.
TEST(UnwrittenExercise, TheGraderSeesNotImplementedAndALabTheReference) {
  try {
    stub_add(2, 3);
    FAIL() << "a stub not written yet returned in the grader (the default)";
  } catch (const dtl::NotImplemented& e) {
    EXPECT_EQ(e.function(), "stub_add");
    EXPECT_EQ(e.exercise_id(), "adding");
    EXPECT_EQ(std::string(e.what()).rfind("stub_add is not implemented yet", 0), 0u) << e.what();
  }
  EXPECT_EQ(reference_calls, 0) << "the grader must never run the reference";

  dtl::ex::run_references_for_unwritten_exercises();
  testing::internal::CaptureStderr();
  EXPECT_EQ(stub_add(2, 3), 5);
  EXPECT_EQ(stub_add(40, 2), 42);
  const std::string notes = testing::internal::GetCapturedStderr();
  EXPECT_EQ(reference_calls, 2);
  const std::string start = "note: using the reference for stub_add: not written yet (";
  const std::string end = "tests/grade/unwritten_test.cpp; dtlab grade --exercise adding)\n";  // the stub's file
  EXPECT_EQ(notes.rfind(start, 0), 0u) << notes;
  ASSERT_GE(notes.size(), end.size()) << notes;
  EXPECT_EQ(notes.substr(notes.size() - end.size()), end) << notes;
  EXPECT_EQ(notes.find('\n'), notes.size() - 1) << "one note per function, not one per call: " << notes;
}
