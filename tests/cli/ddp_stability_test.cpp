// Issue 13: the same DDP configuration reported a speedup anywhere from 0.27 to 2.65 from
// run to run, and exposed communication from 0 to 0.6 ms. Two consecutive runs must now
// report exposed communication within 20% of each other.
//
// What made it noisy (labs/ddp/ddp_timing.cpp, ddp_lab.cpp): launching the last bucket
// wakes the comm stream, which took the core from the rank thread before it read the
// clock, so "end of backward" was read late and the exposed time came out near 0; single
// steps stretched by milliseconds when the scheduler ran something else; and 4 timed
// steps were all there was. Now backward's end is noted in the last bucket's hook, the
// communication's end is the comm stream's own event, and the figure is the median of 5
// runs of 5 steps.
//
// This test runs alone (RUN_SERIAL). What remains is the machine: with fewer cores than
// the run's 8 busy threads (4 ranks, 4 comm streams), or other work on it, the comm
// streams' reductions wait for a core. There a spread over 20% is reported as a skip with
// the figures, not as a failure of the lab; on a machine with the cores to spare it fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/cli/cli_util.h"

using nlohmann::json;

namespace {

struct Exposed {
  double median = 0, min = 0, max = 0;
};

Exposed exposed_communication(const std::string& out) {
  const json r = json::parse(out);
  for (const auto& row : r["rows"])
    if (row["id"] == "bucketed.exposed_comm_per_step")
      return {row["measured"].get<double>(), row["spread"]["min"].get<double>(), row["spread"]["max"].get<double>()};
  ADD_FAILURE() << "no row bucketed.exposed_comm_per_step in\n" << out;
  return {};
}

}  // namespace

TEST(DdpStability, ExposedCommunicationOfConsecutiveRunsWithin20Percent) {
  const std::string args = "run ddp --variant bucketed --ranks 4 --link pcie4 --json";
  std::vector<Exposed> runs;
  std::string figures;
  for (int i = 0; i < 3; ++i) {
    const auto o = dtl::test::run_dtlab(args);
    ASSERT_EQ(o.code, 0) << o.err;
    runs.push_back(exposed_communication(o.out));
    char line[160];
    std::snprintf(line, sizeof line, "  run %d: %.1f µs (its 5 runs: %.1f–%.1f µs)\n", i + 1, runs.back().median * 1e6,
                  runs.back().min * 1e6, runs.back().max * 1e6);
    figures += line;
  }
  const auto [lo, hi] = std::minmax_element(runs.begin(), runs.end(),
                                            [](const Exposed& a, const Exposed& b) { return a.median < b.median; });
  ASSERT_GT(lo->median, 0) << figures;
  const double spread = hi->median / lo->median - 1;
  std::printf("dtlab %s, exposed communication per step:\n%sspread %.0f%%\n", args.c_str(), figures.c_str(),
              100 * spread);
  if (spread <= 0.2) return;
  double load = 0;
  const int cores = int(std::thread::hardware_concurrency());
  const bool busy = getloadavg(&load, 1) == 1 && load > cores;
  if (cores < 8 || busy)
    GTEST_SKIP() << "spread " << int(100 * spread) << "% over 20%, on a machine with " << cores << " cores and load "
                 << load << " (the run has 8 busy threads): the comm streams waited for a core\n"
                 << figures;
  FAIL() << "exposed communication of three consecutive runs spreads " << int(100 * spread) << "% (over 20%)\n"
         << figures;
}
