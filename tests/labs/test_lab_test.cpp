// docs/reference.md's "Adding a lab", proved: the test lab (tests/test_lab/, a folder like labs/<lab>/
// with its lab, option table, exercise, solution, hints and graded test) is added by the
// one registration line below, and then the registry, the option table, a run on thread
// ranks, its small run, the hints and the grade suite (its grade_test.cpp, linked in) all
// find it.
#include "tests/test_lab/labs/test_lab/test_lab.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "labs/lab.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

namespace {
const bool kRegistered = (register_lab(&test_lab_info), true);  // the one line a new lab needs
}  // namespace

TEST(TestLab, TheRegistryFindsItBesideTheBuiltInLabs) {
  ASSERT_TRUE(kRegistered);
  const LabInfo* lab = find_lab("test_lab");
  ASSERT_NE(lab, nullptr);
  EXPECT_NE(find_lab("ddp"), nullptr);
  ASSERT_EQ(lab->options.size(), 1u);
  EXPECT_EQ(lab->options[0].name, "length");
  LabConfig cfg;
  cfg.options.set("length", "77");
  EXPECT_EQ(lab->read_back(with_defaults(*lab, cfg).options).at("length"), "77");
  cfg.options.set("length", "0");
  EXPECT_THROW(with_defaults(*lab, cfg), UsageError);  // below its range
  EXPECT_THROW(register_lab(&test_lab_info), Error);   // the registry was read: too late
}

TEST(TestLab, ItRunsOnThreadRanksAndItsChecksHold) {
  for (int P : {1, 3}) {
    Trace trace(P);
    LabConfig cfg;
    cfg.ranks = P;
    cfg.options.set("length", "1003");
    const Report rep = test::run_lab("test_lab", cfg, trace);
    const ReportRow* diff = rep.find("weighted_sum.max_diff");
    ASSERT_NE(diff, nullptr) << P << " ranks";
    EXPECT_TRUE(diff->passed()) << P << " ranks: max diff " << diff->measured;
    EXPECT_EQ(test::row(rep, "weighted_sum.bytes"), 4.0 * 1003) << P << " ranks";
  }
}

// Its small run (LabInfo::small_run) is what the registry-wide tests start from: the option
// fuzz, the option-effect table and the exercise track need no entry of their own for it.
TEST(TestLab, ItsSmallRunPassesItsChecks) {
  const LabInfo* lab = find_lab("test_lab");
  ASSERT_NE(lab, nullptr);
  ASSERT_FALSE(lab->small_run.empty());
  LabConfig cfg;
  for (const auto& [flag, value] : lab->small_run) {
    if (flag == "ranks")
      cfg.ranks = std::stoi(value);
    else
      cfg.options.set(flag, value);
  }
  Trace trace(cfg.ranks);
  const Report rep = test::run_lab("test_lab", cfg, trace);
  EXPECT_TRUE(rep.ok);
  EXPECT_NE(rep.find("weighted_sum.max_diff"), nullptr);
}

TEST(TestLab, ItsHintsAreFoundByTheExercisesId) {
  for (int level = 1; level <= ex::kHintLevels; ++level)
    EXPECT_FALSE(exercise_hint("weighted_sum", level).empty()) << level;
  const LabInfo* lab = find_lab("test_lab");
  ASSERT_NE(lab, nullptr);
  ASSERT_EQ(lab->exercises.size(), 1u);
  EXPECT_EQ(lab->exercises[0].suite,
            "WeightedSum");  // tests/test_lab/tests/grade/test_lab/grade_test.cpp, linked into this binary
}
