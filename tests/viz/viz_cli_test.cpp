// dtlab-viz's command line (issue 14): every numeric option is range-checked while the
// arguments are parsed, before any window, trace or run, so a bad value exits 2 with a
// message naming the option and its range (it used to reach GLFW: --width -5 aborted).
// Runs without a display: DISPLAY and WAYLAND_DISPLAY are removed for the child.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct VizRun {
  int code = -1;
  std::string output;  // stdout and stderr
};

VizRun viz(const std::string& args) {
  const std::string cmd = "env -u DISPLAY -u WAYLAND_DISPLAY " + std::string(DTLAB_VIZ_EXE) + " " + args + " 2>&1";
  VizRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

TEST(VizCli, NumericOptionsOutOfRangeAreUsageErrorsNamingTheRange) {
  const struct {
    const char* args;
    const char* option;
    const char* range;
  } cases[] = {
      {"--window-width -5", "--window-width", "from 64 to 8192"},
      {"--window-width=-5", "--window-width", "from 64 to 8192"},
      {"--window-width 0", "--window-width", "from 64 to 8192"},
      {"--window-width 99999999999", "--window-width", "from 64 to 8192"},
      {"--window-width abc", "--window-width", "from 64 to 8192"},
      {"--window-height -1", "--window-height", "from 64 to 8192"},
      {"--window-height 100000", "--window-height", "from 64 to 8192"},
      {"--ranks 0", "--ranks", "from 1 to 64"},
      {"-r 65", "--ranks", "from 1 to 64"},
      {"--ranks -3", "--ranks", "from 1 to 64"},
      {"--bytes 0", "--bytes", "from 4 to 16M"},
      {"--bytes 1G", "--bytes", "from 4 to 16M"},
      {"--bytes -3", "--bytes", "from 4 to 16M"},
      {"--bytes 12Q", "--bytes", "from 4 to 16M"},
      {"--zoom 0.5", "--zoom", "from 1 to 1e+09"},
      {"--zoom nan", "--zoom", "from 1 to 1e+09"},
      {"--zoom 1e10", "--zoom", "from 1 to 1e+09"},
      {"--at-step -2", "--at-step", "from 0 to 1000000000"},
      {"--at-step 1e99", "--at-step", "from 0 to 1000000000"},
      {"--frames 0", "--frames", "from 1 to 10000"},
      {"--frames -1", "--frames", "from 1 to 10000"},
  };
  for (const auto& c : cases) {
    const VizRun r = viz(c.args);
    EXPECT_EQ(r.code, 2) << "dtlab-viz " << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.option), std::string::npos) << "dtlab-viz " << c.args << " does not name the option:\n"
                                                          << r.output;
    EXPECT_NE(r.output.find(c.range), std::string::npos) << "dtlab-viz " << c.args << " does not give the range:\n"
                                                         << r.output;
  }
}

// Values inside the ranges pass the parser: what fails next is the missing trace (bad
// input: exit 2, as dtlab's).
TEST(VizCli, ValuesInsideTheRangesAreAccepted) {
  const VizRun r =
      viz("/nonexistent/trace.json --window-width 64 --window-height 8192 --ranks 64 --bytes 16M --zoom 1 --at-step 0 "
          "--frames 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot open the trace"), std::string::npos) << r.output;
}

// Issue 13: a live run takes the lab's own options (LabInfo::options), no hard-coded
// --algo: each lab refuses the others' options naming its own, and validates its values.
TEST(VizCli, EachLabTakesItsOwnOptions) {
  const struct {
    const char* args;
    const char* says;
  } refused[] = {
      {"--lab ddp --algo ring", "the ddp lab has no option --algo; its options are --variant, --bucket-mb"},
      {"--lab ddp --bytes 1K", "the ddp lab has no option --bytes"},
      {"--lab collectives --variant naive",
       "the collectives lab has no option --variant; its options are --bytes, --algo"},
      {"--lab collectives --width 32", "the window's size is --window-width"},
      {"--lab ddp --variant teleport", "--variant"},
      {"--lab ddp --width 0", "--width"},
      {"--lab ddp --ranks 2 --batch 8 --view ring",
       "the ddp lab has no ring view; its views are timeline, memory, report"},
      {"/nonexistent/trace.json --width 1280",
       "a trace replays as it was recorded; the window's size is --window-width"},
      {"/nonexistent/trace.json --device standin", "--device is an option of a live run (--lab)"},
      {"--lab zero --device tpu", "--device"},
      // A live run the lab's own rules refuse: exit 2 before any window (it used to open an
      // empty window that said so inside and exit 0). One per lab with such rules.
      {"--lab zero --ranks 3 --view memory", "--batch 32 must divide evenly over 3 ranks"},
      {"--lab ddp --ranks 3 --batch 64", "--batch 64 must divide evenly over 3 ranks"},
      {"--lab pipeline --ranks 3 --depth 2", "--depth 2"},
      {"--lab tensor_parallel --ranks 3", "--tp (--ranks) 3"},
      {"--lab grid --ranks 3", "--ranks 3"},
  };
  for (const auto& c : refused) {
    const VizRun r = viz(c.args);
    EXPECT_EQ(r.code, 2) << "dtlab-viz " << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << "dtlab-viz " << c.args << "\n" << r.output;
  }
  // Accepted: what fails next is the missing display (exit 1), after the run has started.
  for (const char* ok : {"--lab ddp --ranks 2 --variant naive --width 32 --depth 3 --batch 8 --steps 2",
                         "--lab collectives --algo tree --op max --bytes 64 --ranks 3",
                         "--lab zero --ranks 2 --device standin --width 32 --depth 3 --batch 8 --steps 1"}) {
    const VizRun r = viz(ok);
    EXPECT_EQ(r.code, 1) << "dtlab-viz " << ok << "\n" << r.output;
    EXPECT_NE(r.output.find("no display"), std::string::npos) << "dtlab-viz " << ok << "\n" << r.output;
  }
}

// Issue 47: the per-rank torch.profiler traces of one run open together, and --overlap
// prints what `dtlab analyze` prints for them, byte for byte (one computation:
// core/trace/run_breakdown.h). Two crafted legacy traces: rank 0 waits in the all-reduce
// inside its train_step span for rank 1, whose clock reads 1000 µs more.
TEST(VizCli, OverlapOfATorchRunIsWhatDtlabAnalyzePrints) {
  const std::string dir = ::testing::TempDir() + "viz_cli_torch_run";
  std::filesystem::create_directories(dir);
  auto span = [](const char* name, int tid, int ts, int dur) {
    return std::string("{\"name\": \"") + name + "\", \"ph\": \"X\", \"ts\": " + std::to_string(ts) +
           ", \"dur\": " + std::to_string(dur) + ", \"tid\": " + std::to_string(tid) + ", \"pid\": \"CPU functions\"}";
  };
  std::ofstream(dir + "/rank0.json") << "[" + span("train_step", 1, 0, 100) + "," + span("aten::mm", 1, 0, 20) + "," +
                                            span("gloo:all_reduce", 2, 22, 68) + "]";
  std::ofstream(dir + "/rank1.json") << "[" + span("train_step", 1, 1000, 100) + "," + span("aten::mm", 1, 1000, 80) +
                                            "," + span("gloo:all_reduce", 2, 1082, 8) + "]";
  const VizRun shown = viz(dir + " --overlap");
  const VizRun files = viz(dir + "/rank0.json " + dir + "/rank1.json --overlap");
  const std::string cmd = std::string(DTLAB_EXE) + " analyze " + dir;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string analyzed;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) analyzed.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_EQ(shown.code, 0) << shown.output;
  EXPECT_EQ(shown.output, analyzed);
  EXPECT_EQ(files.output, analyzed);
  EXPECT_NE(
      analyzed.find("rank 0: window 0.100 ms = compute 0.020 ms + exposed communication 0.068 ms + idle 0.012 ms"),
      std::string::npos)
      << analyzed;
  std::filesystem::remove_all(dir);
}
