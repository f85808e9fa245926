// Leveled hints for an exercise: what `dtlab grade --hint 1|2|3` prints under a failing
// exercise. Each lab keeps its exercises' hints beside them (exercises/<lab>_hints.cpp) and
// lists them in its LabInfo (labs/lab.h: exercise_hint finds one by ExerciseInfo::id):
//   level 1  the idea (what the function is for, the curriculum's picture)
//   level 2  the formula or the indices
//   level 3  an outline in words
// Hints are prose, never code: tests/grade/hints_test.cpp checks that no line of
// solutions/*.cpp appears in any of them. The same in both tracks.
#pragma once

#include <span>
#include <string_view>

namespace dtl::ex {

inline constexpr int kHintLevels = 3;

struct ExerciseHints {
  std::string_view id;                  // ExerciseInfo::id, e.g. "ring_all_reduce" or "tree"
  std::string_view level[kHintLevels];  // level[0] is hint 1
};

// What each level gives, for --help and the grader's footer ("the idea", ...).
inline std::string_view hint_level_name(int level) {
  switch (level) {
    case 1: return "the idea";
    case 2: return "the formula or the indices";
    case 3: return "an outline in words";
    default: return "";
  }
}

}  // namespace dtl::ex
