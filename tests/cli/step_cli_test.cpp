// Every lab steps in a terminal (issue 28, item 4): `dtlab run LAB --step` prints each
// transfer (collectives with their chunk picture; the pipeline with its text Gantt) or each
// library collective (DDP, ZeRO, tensor parallel, the grid, the GPT, with what it is for),
// each rank's memory as it changes, then the lab's report with its checks passing. On a
// terminal Enter moves one step and 'c' runs to the end quietly (driven here through a
// pseudo-terminal by util-linux's `script`).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/cli/cli_util.h"

namespace {

using dtl::test::CliOutput;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct LabStep {
  const char* args;   // the lab and small options
  const char* first;  // its first step's line begins so
  const char* also;   // something only this lab's steps show
};

}  // namespace

class StepEveryLab : public ::testing::TestWithParam<LabStep> {};

TEST_P(StepEveryLab, PrintsEveryStepThenThePassingReport) {
  const LabStep& c = GetParam();
  const CliOutput o = dtl::test::run_dtlab(std::string("run ") + c.args + " --step < /dev/null");
  ASSERT_EQ(o.code, 0) << c.args << "\n" << o.err << o.out.substr(0, 2000);
  EXPECT_NE(o.out.find(c.first), std::string::npos) << c.args << ": no '" << c.first << "'\n" << o.out.substr(0, 2000);
  EXPECT_NE(o.out.find(c.also), std::string::npos) << c.args << ": no '" << c.also << "'\n" << o.out.substr(0, 3000);
  EXPECT_NE(o.out.find("    memory  rank 0:"), std::string::npos) << c.args << ": no memory line";
  EXPECT_NE(o.out.find("result: OK"), std::string::npos) << c.args;
  std::printf("%-44s %zu lines of step-through\n", c.args, count(o.out, "\n"));
}

INSTANTIATE_TEST_SUITE_P(
    Labs, StepEveryLab,
    ::testing::Values(LabStep{"ddp --ranks 2 --steps 2", "collective 1:", "gradient bucket 0"},
                      LabStep{"zero --ranks 2 --stage 3 --steps 1", "collective 1:", "all_gather of"},
                      LabStep{"pipeline --ranks 2 --micro-batches 4 --compute-us 200 --steps 1",
                              "transfer 1:", "bubble"},
                      LabStep{"tensor_parallel --ranks 2 --steps 1", "collective 1:", "all_reduce of 32 KiB"},
                      LabStep{"grid --ranks 4 --tp 2 --pp 2 --steps 1", "collective 1:", "the tp group"},
                      LabStep{"gpt --ranks 2 --steps 60", "collective 1:", "all_reduce of"},
                      LabStep{"collectives --ranks 3 --bytes 48", "transfer 1:", "initial state:"}));

// The pipeline's text Gantt: a row per stage, its actions (F0, B0, ...) and the bubble as dots;
// at the end of 1F1B with P = 2, M = 4 the last Gantt holds every F and B of each stage.
TEST(StepCli, ThePipelineGrowsATextGantt) {
  const CliOutput o =
      dtl::test::run_dtlab("run pipeline --ranks 2 --micro-batches 4 --compute-us 500 --steps 1 --step < /dev/null");
  ASSERT_EQ(o.code, 0) << o.err;
  // Step 0 printed whole once the next step began (its header, then a row per stage).
  const std::size_t last = o.out.find("training step 0 complete");
  ASSERT_NE(last, std::string::npos) << o.out.substr(0, 3000);
  std::size_t end = last;
  for (int line = 0; line < 3; ++line) end = o.out.find('\n', end) + 1;
  const std::string gantt = o.out.substr(last, end - last);
  for (const char* action : {"F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3"})
    EXPECT_EQ(count(gantt, action), 2u) << action << "\n" << gantt;
  EXPECT_NE(gantt.find("(16 actions"), std::string::npos) << gantt;
  std::printf("%s", gantt.c_str());
}

// On a terminal: two Enters move two collectives, 'c' runs to the end without printing more.
TEST(StepCli, EnterStepsAndCContinuesOnATerminal) {
  if (std::system("command -v script >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "util-linux's script (a pseudo-terminal) is not installed";
  const CliOutput o = dtl::test::run_dtlab_shell("printf '\\n\\nc\\n' | script -qec '" + std::string(DTLAB_EXE) +
                                                 " run ddp --ranks 2 --steps 2 --step' /dev/null");
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("Enter: next collective"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("collective 1:"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("collective 2:"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("collective 3:"), std::string::npos) << "'c' should run on without printing\n" << o.out;
  EXPECT_NE(o.out.find("result: OK"), std::string::npos) << o.out;
}
