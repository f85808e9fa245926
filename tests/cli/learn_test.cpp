// `dtlab learn`: the learner's path (docs/path.md) is built into the binary, names every
// lab of the registry and every exercise, and prints one lab's part on request.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "labs/lab.h"
#include "tests/cli/cli_util.h"

namespace {

dtl::test::CliOutput dtlab(const std::string& args) { return dtl::test::run_dtlab(args); }

}  // namespace

TEST(Learn, PrintsEveryLabAndEveryExerciseOfTheRegistry) {
  const auto o = dtlab("learn");
  ASSERT_EQ(o.code, 0) << o.err;
  for (const dtl::LabInfo& lab : dtl::lab_registry()) {
    EXPECT_NE(o.out.find("Lab `" + lab.name + "`"), std::string::npos) << "the path has no part for lab " << lab.name;
    for (const dtl::ExerciseInfo& e : lab.exercises)
      EXPECT_NE(o.out.find(e.id), std::string::npos) << "the path never names exercise " << e.id << " of " << lab.name;
  }
}

TEST(Learn, TakesTheExercisesInTheRegistrysOrder) {
  const std::string out = dtlab("learn").out;
  std::size_t last = 0;
  for (const dtl::LabInfo& lab : dtl::lab_registry())
    for (const dtl::ExerciseInfo& e : lab.exercises) {
      const std::size_t at = out.find("### " + e.id);
      ASSERT_NE(at, std::string::npos) << "no '### " << e.id << "' heading";
      EXPECT_GE(at, last) << e.id << " comes before the exercise the registry lists before it";
      last = at;
    }
}

TEST(Learn, PrintsTheTextBuiltFromDocsPathMd) {
  std::ifstream in(std::string(DTL_SOURCE_DIR) + "/docs/path.md");
  ASSERT_TRUE(in) << "docs/path.md";
  std::stringstream doc;
  doc << in.rdbuf();
  // The binary carries the file (it runs without the source tree); a stale copy means the
  // build did not pick up an edit.
  EXPECT_EQ(dtlab("learn").out, doc.str());
}

TEST(Learn, OneLabPrintsOnlyItsPart) {
  const auto& labs = dtl::lab_registry();
  for (const dtl::LabInfo& lab : labs) {
    const auto o = dtlab("learn " + lab.name);
    ASSERT_EQ(o.code, 0) << lab.name << ": " << o.err;
    EXPECT_EQ(o.out.rfind("## ", 0), 0u) << lab.name << ": starts at its heading:\n" << o.out;
    EXPECT_NE(o.out.find("Lab `" + lab.name + "`"), std::string::npos);
    for (const dtl::LabInfo& other : labs) {
      if (other.name != lab.name) { EXPECT_EQ(o.out.find("Lab `" + other.name + "`"), std::string::npos) << lab.name; }
    }
  }
}

TEST(Learn, AnUnknownLabIsAUsageErrorNamingTheLabs) {
  const auto o = dtlab("learn butterfly");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("'butterfly' is not a lab"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("collectives"), std::string::npos) << o.err;
}
