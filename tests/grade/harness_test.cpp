// The grading harness can fail: a deadlock becomes a failed run that names what each
// rank waits on, and a "ring" that calls the library all_reduce shows no ring traffic.
#include <chrono>

#include "core/comm/chunking.h"
#include "tests/grade/grade_util.h"

using namespace dtl;

TEST(GradingHarness, DeadlockBecomesAFailureNamingTheWaits) {
  const auto t0 = std::chrono::steady_clock::now();
  const grade::GradedRun run = grade::run_graded(3, [](Comm& c) {
    float x = 0;  // every rank receives first: a classic ring deadlock
    c.recv(&x, 4, mod(c.rank() - 1, 3), 0);
    c.send(&x, 4, mod(c.rank() + 1, 3), 0);
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  ASSERT_FALSE(run.error.empty());
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(run.error.find("rank " + std::to_string(r) + " waits recv from rank " + std::to_string(mod(r - 1, 3))),
              std::string::npos)
        << run.error;
}

TEST(GradingHarness, LibraryShortcutShowsNoPointToPointTraffic) {
  const grade::GradedRun run = grade::run_graded(4, [](Comm& c) {
    std::vector<float> v(64, 1.0f);
    c.all_reduce(v.data(), v.data(), v.size(), DType::f32, ReduceOp::sum);  // the shortcut
  });
  ASSERT_TRUE(run.error.empty()) << run.error;
  for (const auto& p : run.ranks) {
    EXPECT_EQ(p.bytes_sent, 0.0);                                      // the ring test expects 2(P-1)/P·N here
    EXPECT_EQ(p.collectives, std::vector<std::string>{"all_reduce"});  // and this list to be empty
  }
}
