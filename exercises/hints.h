// Leveled hints for every exercise: what `dtlab grade --hint 1|2|3` prints under a
// failing exercise. One entry per exercise, keyed by ExerciseInfo::id (labs/lab.h), so a
// lab's exercise list and its hints meet in the grader:
//   level 1  the idea (what the function is for, the curriculum's picture)
//   level 2  the formula or the indices
//   level 3  an outline in words
// Hints are prose, never code: tests/grade/hints_test.cpp checks that no line of
// solutions/*.cpp appears in any of them. Built into both tracks (exercises/hints.cpp).
#pragma once

#include <span>
#include <string_view>

namespace dtl::ex {

inline constexpr int kHintLevels = 3;

struct ExerciseHints {
  std::string_view id;                 // ExerciseInfo::id, e.g. "ring_all_reduce" or "tree"
  std::string_view level[kHintLevels];  // level[0] is hint 1
};

// What each level gives, for --help and the grader's footer ("the idea", ...).
std::string_view hint_level_name(int level);

// Every exercise's hints, in the order a learner meets the exercises.
std::span<const ExerciseHints> exercise_hints();

// Hint `level` (1..kHintLevels) of exercise `id`; empty when there is none.
std::string_view exercise_hint(std::string_view id, int level);

}  // namespace dtl::ex
