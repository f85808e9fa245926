// What a learner sees (issue 13): every lab's report fits 100 columns, a `--variant all`
// run is one table with a column per variant, timings carry the runs they are the median
// of, and a long run says how far it has come on stderr.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "labs/lab.h"
#include "labs/report_format.h"
#include "tests/cli/cli_util.h"

using dtl::test::run_dtlab;
using nlohmann::json;

namespace {

// Every line of `text` wider than `width` columns, with its width (empty: none).
std::string lines_wider_than(const std::string& text, std::size_t width) {
  std::istringstream in(text);
  std::string wide;
  for (std::string line; std::getline(in, line);)
    if (dtl::display_width(line) > width) wide += std::to_string(dtl::display_width(line)) + " columns: " + line + "\n";
  return wide;
}

// Lines of `text` holding `needle`.
int lines_with(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

const json* row(const json& report, const std::string& id) {
  for (const auto& r : report["rows"])
    if (r["id"] == id) return &r;
  return nullptr;
}

}  // namespace

TEST(ReportCli, EveryLabsDefaultReportFitsIn100Columns) {
  std::vector<std::string> commands;
  for (const dtl::LabInfo& lab : dtl::lab_registry()) commands.push_back("run " + lab.name);
  commands.push_back("run ddp --variant all --link pcie4 --precision bf16");
  commands.push_back("run collectives --algo all --ranks 6 --link pcie4");
  for (const std::string& args : commands) {
    const auto o = run_dtlab(args);
    ASSERT_EQ(o.code, 0) << args << "\n" << o.err;
    EXPECT_NE(o.out.find("result: OK"), std::string::npos) << args << "\n" << o.out;
    EXPECT_EQ(lines_wider_than(o.out, 100), "") << "'dtlab " << args << "' prints lines over 100 columns; all of it:\n"
                                                << o.out;
  }
}

TEST(ReportCli, HeaderNamesTheConfigurationAndUnitsAreReadable) {
  const auto o = run_dtlab("run ddp --variant bucketed --ranks 2 --link pcie4 --width 64 --depth 3 --batch 16");
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* words : {"ddp lab", "2 ranks (threads)", "link pcie4: 32 GB/s", "MLP 64 wide × 3 layers", "batch 16",
                            "fp32", "variant bucketed"})
    EXPECT_NE(o.out.find(words), std::string::npos) << "the header should say '" << words << "':\n" << o.out;
  EXPECT_NE(o.out.find(" KiB"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" µs"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("e+0"), std::string::npos) << "no raw exponents such as 1.732e+07:\n" << o.out;
  EXPECT_NE(o.out.find("ideal: P×"), std::string::npos) << "the speedup's prediction says where it comes from:\n"
                                                        << o.out;
  EXPECT_NE(o.out.find("≤ 1e-5"), std::string::npos) << "a check's tolerance:\n" << o.out;
}

TEST(ReportCli, AllVariantsAreOneTableWithAColumnEach) {
  const auto o = run_dtlab("run ddp --variant all --ranks 2 --width 32 --depth 2 --batch 16 --steps 2 --repeat 2");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(lines_with(o.out, "exposed communication"), 1) << "one row for every variant:\n" << o.out;
  std::istringstream in(o.out);
  bool header = false;
  for (std::string line; std::getline(in, line);)
    header =
        header || (line.find("naive") < line.find("flat") && line.find("flat") < line.find("bucketed") &&
                   line.find("bucketed") < line.find("accumulate") && line.find("accumulate") != std::string::npos);
  EXPECT_TRUE(header) << "a column per variant, in order:\n" << o.out;
  const auto c = run_dtlab("run collectives --algo all --ranks 4 --bytes 64K --iters 2");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(lines_with(c.out, "bytes sent per rank"), 2) << "one row, and its formulas below:\n" << c.out;
}

TEST(ReportCli, TimingsAreTheMedianOfRepeatedRuns) {
  const auto o = run_dtlab("run ddp --ranks 2 --width 32 --depth 2 --batch 16 --steps 2 --repeat 3 --json");
  ASSERT_EQ(o.code, 0) << o.err;
  const json r = json::parse(o.out);
  const json* exposed = row(r, "bucketed.exposed_comm_per_step");
  ASSERT_NE(exposed, nullptr) << r.dump(1);
  EXPECT_EQ((*exposed)["label"], "exposed communication per step");
  EXPECT_EQ((*exposed)["unit"], "s");
  EXPECT_EQ((*exposed)["spread"]["runs"].get<int>(), 3);
  EXPECT_LE((*exposed)["spread"]["min"].get<double>(), (*exposed)["measured"].get<double>());
  EXPECT_GE((*exposed)["spread"]["max"].get<double>(), (*exposed)["measured"].get<double>());
  EXPECT_TRUE((*exposed)["predicted"].is_null());
  const json* c = nullptr;
  const auto coll = run_dtlab("run collectives --ranks 2 --bytes 4K --iters 4 --json");
  ASSERT_EQ(coll.code, 0) << coll.err;
  const json cr = json::parse(coll.out);
  ASSERT_NE(c = row(cr, "ring.time"), nullptr) << cr.dump(1);
  EXPECT_EQ((*c)["spread"]["runs"].get<int>(), 4);
  for (const char* bad : {"run ddp --repeat 0", "run collectives --repeat 3"}) {
    const auto b = run_dtlab(bad);
    EXPECT_EQ(b.code, 2) << bad << "\n" << b.err;
    EXPECT_NE(b.err.find("--repeat"), std::string::npos) << bad << "\n" << b.err;
  }
}

TEST(ReportCli, ALongRunPrintsProgressOnStderr) {
  const std::string args =
      "run ddp --variant all --ranks 2 --width 32 --depth 2 --batch 16 --steps 2 --repeat 2 --json";
  const auto start = std::chrono::steady_clock::now();
  const auto quick = run_dtlab(args);  // over in well under the 2 s it stays quiet for (here ~0.2 s)
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(quick.code, 0) << quick.err;
  if (seconds < 1.5) {  // (a sanitizer build may be slower)
    EXPECT_EQ(quick.err, "") << "a quick run prints no progress";
  }
  setenv("DTL_PROGRESS_AFTER_S", "0", 1);  // as if it had already run that long
  const auto o = run_dtlab(args);
  unsetenv("DTL_PROGRESS_AFTER_S");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("dtlab: "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(": step 1 of "), std::string::npos) << o.err;
  EXPECT_NO_THROW(json::parse(o.out)) << "progress stays off stdout:\n" << o.out;
}
