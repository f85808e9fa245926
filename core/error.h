// dtl::Error and friends: the one way library code reports a problem.
//
// Library code throws; only main() turns an error into an exit code. Every message
// should tell a learner what happened and what to do next, e.g.
//   "rank 1: recv from rank 0 tag 3 expected 256 bytes but the message has 128;
//    make both sides agree on the count".
#pragma once

#include <stdexcept>
#include <string>

namespace dtl {

// Any error raised by dtlab itself.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad command-line input: main() maps it to exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Raised in every rank of a world after one rank failed or the watchdog fired.
// `failed_rank` is the rank that failed first (-1 for the watchdog).
class Aborted : public Error {
 public:
  Aborted(int failed_rank, const std::string& why) : Error(why), failed_rank_(failed_rank) {}
  int failed_rank() const { return failed_rank_; }

 private:
  int failed_rank_;
};

// Thrown by an exercise stub the student has not written yet. It names the function, the
// exercise it belongs to (ExerciseInfo::id: `tree` covers tree_reduce, tree_broadcast and
// tree_all_reduce) and where the hints are; the grader shows the hints itself.
class NotImplemented : public Error {
 public:
  explicit NotImplemented(std::string function, std::string exercise_id = {})
      : Error(function +
              " is not implemented yet: replace the reference_until_written line of its stub (exercises/<lab>.cpp) "
              "with your code; hints: "
              "dtlab grade --exercise " +
              (exercise_id.empty() ? function : exercise_id) + " --hint 1 (2 and 3 say more)"),
        function_(std::move(function)),
        exercise_id_(exercise_id.empty() ? function_ : std::move(exercise_id)) {}
  const std::string& function() const { return function_; }
  const std::string& exercise_id() const { return exercise_id_; }

 private:
  std::string function_;
  std::string exercise_id_;
};

}  // namespace dtl

// DTL_CHECK(cond, message): throw dtl::Error naming file:line when cond is false.
#define DTL_CHECK(cond, message)                                                                                    \
  do {                                                                                                              \
    if (!(cond)) throw ::dtl::Error(std::string(message) + " [" + __FILE__ + ":" + std::to_string(__LINE__) + "]"); \
  } while (0)
