// dtlab-viz's command line (issue 14): every numeric option is range-checked while the
// arguments are parsed, before any window, trace or run, so a bad value exits 2 with a
// message naming the option and its range (it used to reach GLFW: --width -5 aborted).
// Runs without a display: DISPLAY and WAYLAND_DISPLAY are removed for the child.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
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
      {"--width -5", "--width", "from 64 to 8192"},          {"--width=-5", "--width", "from 64 to 8192"},
      {"--width 0", "--width", "from 64 to 8192"},           {"--width 99999999999", "--width", "from 64 to 8192"},
      {"--width abc", "--width", "from 64 to 8192"},         {"--height -1", "--height", "from 64 to 8192"},
      {"--height 100000", "--height", "from 64 to 8192"},    {"--ranks 0", "--ranks", "from 1 to 64"},
      {"-r 65", "--ranks", "from 1 to 64"},                  {"--ranks -3", "--ranks", "from 1 to 64"},
      {"--bytes 0", "--bytes", "from 4 to 16M"},             {"--bytes 1G", "--bytes", "from 4 to 16M"},
      {"--bytes -3", "--bytes", "from 4 to 16M"},            {"--bytes 12Q", "--bytes", "from 4 to 16M"},
      {"--zoom 0.5", "--zoom", "from 1 to 1e+09"},           {"--zoom nan", "--zoom", "from 1 to 1e+09"},
      {"--zoom 1e10", "--zoom", "from 1 to 1e+09"},          {"--at-step -2", "--at-step", "from 0 to 1000000000"},
      {"--at-step 1e99", "--at-step", "from 0 to 1000000000"}, {"--frames 0", "--frames", "from 1 to 10000"},
      {"--frames -1", "--frames", "from 1 to 10000"},
  };
  for (const auto& c : cases) {
    const VizRun r = viz(c.args);
    EXPECT_EQ(r.code, 2) << "dtlab-viz " << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.option), std::string::npos) << "dtlab-viz " << c.args << " does not name the option:\n" << r.output;
    EXPECT_NE(r.output.find(c.range), std::string::npos) << "dtlab-viz " << c.args << " does not give the range:\n" << r.output;
  }
}

// Values inside the ranges pass the parser: what fails next is the missing trace (exit 1).
TEST(VizCli, ValuesInsideTheRangesAreAccepted) {
  const VizRun r = viz("/nonexistent/trace.json --width 64 --height 8192 --ranks 64 --bytes 16M --zoom 1 --at-step 0 --frames 1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot open the trace"), std::string::npos) << r.output;
}
