// The hints `dtlab grade --hint N` prints (exercises/*_hints.cpp): three different levels for
// every exercise of every lab in the registry, none of them code, and no line of the
// reference solutions in any of them. tests/grade/check_student_grader.sh checks the same
// on the student track's real grader output.
#include "exercises/track/hints.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "labs/lab.h"

using namespace dtl;

namespace {

// Whitespace collapsed to single spaces, trimmed.
std::string squeeze(const std::string& s) {
  std::string out;
  for (const char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The non-trivial lines of solutions/*.cpp: code, comments cut off, at least 10
// characters, no includes, namespaces or lone braces.
std::vector<std::string> solution_lines() {
  std::vector<std::string> lines;
  for (const auto& file : std::filesystem::directory_iterator(std::string(DTL_SOURCE_DIR) + "/solutions")) {
    if (file.path().extension() != ".cpp") continue;
    std::ifstream in(file.path());
    for (std::string line; std::getline(in, line);) {
      const auto comment = line.find("//");
      line = squeeze(comment == std::string::npos ? line : line.substr(0, comment));
      if (line.size() < 10 || line[0] == '#' || line.rfind("namespace", 0) == 0 || line.rfind("} ", 0) == 0) continue;
      lines.push_back(line);
    }
  }
  return lines;
}

// The id of every exercise of every lab in the registry.
std::vector<std::string> exercise_ids() {
  std::vector<std::string> ids;
  for (const LabInfo& lab : lab_registry())
    for (const ExerciseInfo& e : lab.exercises) ids.push_back(e.id);
  return ids;
}

}  // namespace

TEST(ExerciseHints, EveryExerciseOfEveryLabHasThreeDifferentLevels) {
  const auto ids = exercise_ids();
  ASSERT_FALSE(ids.empty());
  for (const std::string& id : ids) {
    std::set<std::string> levels;
    for (int level = 1; level <= ex::kHintLevels; ++level) {
      const std::string hint(exercise_hint(id, level));
      EXPECT_GE(hint.size(), 40u) << id << " has no (or a too short) hint " << level << ": '" << hint << "'";
      levels.insert(hint);
    }
    EXPECT_EQ(levels.size(), std::size_t(ex::kHintLevels)) << id << ": two hint levels say the same";
    EXPECT_TRUE(exercise_hint(id, 0).empty());
    EXPECT_TRUE(exercise_hint(id, ex::kHintLevels + 1).empty());
  }
}

TEST(ExerciseHints, EveryHintBelongsToAnExerciseOfTheRegistry) {
  std::set<std::string> seen;
  const auto all = exercise_ids();
  const std::set<std::string> ids(all.begin(), all.end());
  for (const ex::ExerciseHints& h : exercise_hints()) {
    EXPECT_TRUE(ids.count(std::string(h.id))) << "hints for '" << h.id << "', which no lab lists as an exercise";
    EXPECT_TRUE(seen.insert(std::string(h.id)).second) << "two hint entries for '" << h.id << "'";
  }
}

TEST(ExerciseHints, NoHintContainsALineOfTheSolutions) {
  const std::vector<std::string> lines = solution_lines();
  ASSERT_GT(lines.size(), 50u) << "solutions/*.cpp not found under " << DTL_SOURCE_DIR;
  for (const ex::ExerciseHints& h : exercise_hints())
    for (int level = 1; level <= ex::kHintLevels; ++level) {
      const std::string hint = squeeze(std::string(exercise_hint(h.id, level)));
      for (const std::string& line : lines)
        EXPECT_EQ(hint.find(line), std::string::npos)
            << h.id << " hint " << level << " contains solution code: " << line;
    }
}

TEST(ExerciseHints, HintsAreProseNotCode) {
  for (const ex::ExerciseHints& h : exercise_hints())
    for (int level = 1; level <= ex::kHintLevels; ++level) {
      const std::string_view hint = exercise_hint(h.id, level);
      EXPECT_EQ(hint.find_first_of(";{}"), std::string_view::npos)
          << h.id << " hint " << level << " reads like code (a statement or a block): " << hint;
    }
}

TEST(ExerciseHints, AStubSaysItIsNotImplementedAndWhereTheHintsAre) {
  const NotImplemented e("tree_reduce", "tree");
  const std::string what = e.what();
  EXPECT_EQ(e.exercise_id(), "tree");
  EXPECT_EQ(what.rfind("tree_reduce is not implemented yet", 0), 0u) << what;
  EXPECT_NE(what.find("dtlab grade --exercise tree --hint 1"), std::string::npos) << what;
  EXPECT_EQ(NotImplemented("ring_all_reduce").exercise_id(), "ring_all_reduce");
}
