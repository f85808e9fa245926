// Every lab steps in a terminal (issue 28, item 4): `dtlab run LAB --step` prints each
// transfer (collectives with their chunk picture; the pipeline with its text Gantt) or each
// library collective (DDP, ZeRO, tensor parallel, the grid, the GPT, with what it is for),
// each rank's memory as it changes, then the lab's report with its checks passing. On a
// terminal Enter moves one step and 'c' runs to the end quietly (driven here through a
// pseudo-terminal by util-linux's `script`).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "tests/cli/cli_util.h"

namespace {

using dtl::test::CliOutput;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The pipeline's Gantt of training step 0 as printed once the next step began: its header line
// and a row per stage (2 stages); "" when the run printed none.
std::string first_step_gantt(const std::string& out) {
  const std::size_t last = out.find("training step 0 complete");
  if (last == std::string::npos) return "";
  std::size_t end = last;
  for (int line = 0; line < 3 && end != std::string::npos; ++line) {
    end = out.find('\n', end);
    if (end != std::string::npos) ++end;
  }
  return out.substr(last, end == std::string::npos ? std::string::npos : end - last);
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
  const std::string gantt = first_step_gantt(o.out);
  ASSERT_FALSE(gantt.empty()) << o.out.substr(0, 3000);
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

// Issue 50: ZeRO-3's step-through draws who holds which slice of which layer. Every row is a
// rank's own slice of each layer (".1" on rank 1 of 2) or, while the layer is gathered, all of
// them ("01"); both states show during the step, and the picture follows the learner's run.
TEST(StepCli, ZeroThreeDrawsWhichRankHoldsWhichSlice) {
  const CliOutput o = dtl::test::run_dtlab("run zero --ranks 2 --stage 3 --steps 1 --step < /dev/null");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_NE(o.out.find("    shards (ZeRO-3): the slices of each layer's parameters a rank holds"), std::string::npos)
      << o.out.substr(0, 3000);
  std::size_t rows = 0, gathered = 0, own = 0;
  std::istringstream in(o.out);
  for (std::string line; std::getline(in, line);) {
    for (const int r : {0, 1}) {
      const std::string head = "    rank " + std::to_string(r) + "    ";
      if (line.rfind(head, 0) != 0) continue;
      ++rows;
      std::istringstream cells(line.substr(head.size()));
      for (std::string cell; cells >> cell;) {
        const std::string mine = r == 0 ? "0." : ".1";
        EXPECT_TRUE(cell == "01" || cell == mine) << "rank " << r << " holds '" << cell << "'\n" << line;
        (cell == "01" ? gathered : own) += 1;
      }
    }
  }
  EXPECT_GT(rows, 0u);
  EXPECT_GT(gathered, 0u) << "no layer was ever drawn gathered";
  EXPECT_GT(own, 0u) << "no layer was ever drawn freed back to its shard";
  std::printf("%zu picture rows: %zu cells gathered, %zu own slice only\n", rows, gathered, own);
}

// Issue 50: the experts' step-through draws the routing, tokens → experts → ranks. Each
// rank's tokens send k slots each: a row's cells and its drops sum to (T/EP)·k = 16·2.
TEST(StepCli, ExpertsDrawTheirRouting) {
  const CliOutput o = dtl::test::run_dtlab(
      "run experts --ranks 2 --experts 4 --top-k 2 --tokens 32 --layers 1 --steps 1 --step < /dev/null");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_NE(o.out.find("tokens → experts → ranks"), std::string::npos) << o.out.substr(0, 3000);
  EXPECT_NE(o.out.find("e0  e1"), std::string::npos) << o.out.substr(0, 3000);
  std::size_t rows = 0;
  std::istringstream in(o.out);
  for (std::string line; std::getline(in, line);) {
    const std::size_t at = line.find("'s tokens");
    if (at == std::string::npos || line.rfind("    rank ", 0) != 0) continue;  // a row, not the legend
    ++rows;
    std::istringstream cells(line.substr(at + 9));
    long sum = 0;
    for (long n; cells >> n;) sum += n;
    EXPECT_EQ(sum, 16 * 2) << line;
  }
  EXPECT_GE(rows, 2u) << o.out.substr(0, 3000);
}

// Issue 50: the pipeline steps readably by default: without --compute-us the stepped run takes
// the lab's stepping sizes (LabInfo::live_options) and says so; its Gantt then holds the
// schedule's 1F1B actions, each several columns wide, not timer noise.
TEST(StepCli, ThePipelineStepsReadablyByDefault) {
  const CliOutput o = dtl::test::run_dtlab("run pipeline --ranks 2 --micro-batches 4 --steps 1 --step < /dev/null");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("A run sized to step through: --compute-us 2000"), std::string::npos) << o.out.substr(0, 500);
  const std::string gantt = first_step_gantt(o.out);
  ASSERT_FALSE(gantt.empty()) << o.out.substr(0, 3000);
  for (const char* action : {"F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3"})
    EXPECT_EQ(count(gantt, action), 2u) << action << "\n" << gantt;
  std::printf("%s", gantt.c_str());
}
