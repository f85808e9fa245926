// An exercise the learner has not written yet. Its stub (exercises/<lab>.cpp) returns
//   reference_until_written("ring_all_gather", ref::ring_all_gather, comm, buf);
// and what that does depends on the program:
//   * the grader (the default): throws NotImplemented — an unwritten exercise scores 0;
//   * dtlab and dtlab-viz (they call run_references_for_unwritten_exercises() first): runs
//     the reference solution (exercises/track/reference.h) in its place and says so once, so a
//     lab never fails because a later exercise is not done yet ("using the reference for
//     sync_this_micro_batch: not written yet").
// The learner replaces that return with their own code; from then on the lab runs theirs.
#pragma once

#include <string>
#include <utility>

namespace dtl::ex {

// The function a stub stands for, where several share one exercise that exercise's id
// (`tree` covers tree_reduce, tree_broadcast and tree_all_reduce), and the stub's file. All
// three are string literals: a stub builds one on every call, so nothing is copied.
struct Unwritten {
  // (__builtin_FILE() as a default argument is the caller's file in GCC and Clang alike;
  // std::source_location needs a builtin clang 14, which clang-tidy runs on, lacks.)
  Unwritten(const char* function_name, const char* exercise_id = "", const char* stub_file = __builtin_FILE())
      : function(function_name), exercise(exercise_id), file(stub_file) {}
  const char *function, *exercise, *file;
};

// From now on, stubs not written yet run the reference instead of failing (labs only).
void run_references_for_unwritten_exercises();

// The grader: the exercise whose graded case runs now (its id; "" between cases). A stub of
// any other exercise then runs its reference and says so once, so an exercise's points never
// depend on another being written (a graded ring_all_reduce case that also prices the run
// with all_reduce_cost); the stub of the exercise under grade still throws NotImplemented.
// tests/grade/grade_one_exercise.cpp sets it from each test's suite.
void set_exercise_under_grade(const std::string& id);

// Throws NotImplemented unless this program runs references; else prints, once per
// function, which reference runs in the learner's place.
void use_reference_for(const Unwritten& stub);

template <class Reference, class... Args>
decltype(auto) reference_until_written(const Unwritten& stub, Reference&& reference, Args&&... args) {
  use_reference_for(stub);
  return std::forward<Reference>(reference)(std::forward<Args>(args)...);
}

}  // namespace dtl::ex
